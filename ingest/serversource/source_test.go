package serversource

import (
	"context"
	"errors"
	"testing"

	"weir/connectors"
)

type server struct{ closed int }

func (s *server) Close() error { s.closed++; return nil }

func TestSource(t *testing.T) {
	errStart := errors.New("start failed")
	var fail bool
	var started []*server
	src := New(func(context.Context, connectors.SourceContext) (*server, error) {
		if fail {
			return nil, errStart
		}
		s := &server{}
		started = append(started, s)
		return s, nil
	})
	if src.Server() != nil {
		t.Fatal("a server before Open")
	}
	if err := src.Close(); err != nil {
		t.Fatalf("Close before Open: %v", err)
	}
	fail = true
	if err := src.Open(context.Background(), nil, nil); !errors.Is(err, errStart) {
		t.Fatalf("Open: %v, want %v", err, errStart)
	}
	if src.Server() != nil {
		t.Fatal("a server after a failed Open")
	}
	fail = false
	if err := src.Open(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || src.Server() != started[0] {
		t.Fatalf("Server() = %p, started %v", src.Server(), started)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	buf := make([]connectors.SourceRecord, 0, 4)
	got, err := src.Poll(ctx, buf)
	if err != nil || len(got) != 0 || cap(got) != 4 {
		t.Fatalf("Poll = %v (cap %d), %v; want buf unchanged", got, cap(got), err)
	}
	if err := src.Close(); err != nil || started[0].closed != 1 {
		t.Fatalf("Close: %v, server closed %d times", err, started[0].closed)
	}
}
