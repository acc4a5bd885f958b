package observe

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTapIdle: a point nobody taps never builds a sample; subscribing
// makes it (and its component's step counter) active, closing idle
// again.
func TestTapIdle(t *testing.T) {
	h := NewHub()
	p := h.Point("stream.x", 2, Out)
	built := 0
	p.Publish(func(*Sample) { built++ })
	if p.Active() || built != 0 || h.Steps("stream.x").Load() != 0 {
		t.Fatalf("idle point: active %v, built %d", p.Active(), built)
	}
	var nilPoint *Point
	if nilPoint.Active() {
		t.Fatal("a nil point is active")
	}
	sub, err := h.Subscribe("stream.x", 2, Out, SubOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Active() || h.Steps("stream.x").Load() != 1 {
		t.Fatal("a subscribed step point is not active")
	}
	p.Publish(func(s *Sample) { built++; s.Topic = "t" })
	if s := <-sub.C; s.Component != "stream.x" || s.Step != 2 || s.Direction != Out || s.Topic != "t" || built != 1 {
		t.Fatalf("sample %+v, built %d", s, built)
	}
	sub.Close()
	sub.Close()
	if p.Active() || h.Steps("stream.x").Load() != 0 {
		t.Fatal("closed subscription left the point active")
	}
	if _, ok := <-sub.C; ok {
		t.Fatal("C not closed")
	}
}

// TestTapRateAndLimit: the rate bounds samples (the rest are counted as
// skipped, and not built), the limit ends the subscription, and a slow
// reader loses samples instead of blocking the publisher.
func TestTapRateAndLimit(t *testing.T) {
	h := NewHub()
	p := h.Point("source.a", 0, Out)
	sub, err := h.Subscribe("source.a", 0, Out, SubOptions{Rate: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	built := 0
	for range 1000 {
		p.Publish(func(*Sample) { built++ })
	}
	if built != 5 || len(sub.C) != 5 {
		t.Fatalf("rate 5/s, burst of 1000: built %d, queued %d; want 5", built, len(sub.C))
	}
	for range 5 {
		<-sub.C
	}
	// The next token comes 200 ms later: records offered until then are
	// skipped, and counted on the next sample.
	offered := 0
	deadline := time.Now().Add(5 * time.Second)
	for len(sub.C) == 0 && time.Now().Before(deadline) {
		p.Publish(func(*Sample) { built++ })
		offered++
		time.Sleep(time.Millisecond)
	}
	if s := <-sub.C; s.Skipped != int64(995+offered-1) || built != 6 {
		t.Fatalf("skipped %d, want %d; built %d", s.Skipped, 995+offered-1, built)
	}

	lim, _ := h.Subscribe("source.a", 0, Out, SubOptions{Rate: MaxRate, Limit: 3})
	for range 10 {
		p.Publish(func(*Sample) {})
	}
	n := 0
	for range lim.C {
		n++
	}
	if n != 3 {
		t.Fatalf("limit 3: %d samples", n)
	}

	slow, _ := h.Subscribe("source.b", 0, In, SubOptions{Rate: MaxRate})
	pb := h.Point("source.b", 0, In)
	done := make(chan struct{})
	go func() {
		for range 500 {
			pb.Publish(func(*Sample) {})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a reader that reads nothing blocked the publisher")
	}
	if slow.Lost.Load() == 0 || len(slow.C) != subBuffer {
		t.Fatalf("lost %d, queued %d", slow.Lost.Load(), len(slow.C))
	}
	slow.Close()
}

func TestSubscribeBadOptions(t *testing.T) {
	h := NewHub()
	for _, o := range []struct {
		dir  string
		opts SubOptions
		want string
	}{
		{"up", SubOptions{}, `direction "up"`},
		{In, SubOptions{Rate: MaxRate + 1}, "rate 1001"},
		{In, SubOptions{Rate: -1}, "rate -1"},
		{In, SubOptions{Limit: -2}, "limit -2"},
	} {
		if _, err := h.Subscribe("x", 0, o.dir, o.opts); err == nil || !strings.Contains(err.Error(), o.want) {
			t.Errorf("%s %+v: %v, want %q", o.dir, o.opts, err, o.want)
		}
	}
	for _, s := range []string{"0", "-1", "x", "1001/s", ""} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) took it", s)
		}
	}
	if v, err := ParseRate("2.5/s"); err != nil || v != 2.5 {
		t.Errorf("ParseRate(2.5/s) = %v, %v", v, err)
	}
}

func TestResolve(t *testing.T) {
	g := Graph{Components: []Component{
		{ID: "source.app", Type: "source", Steps: []string{"parse_json", "set", "set"}},
		{ID: "stream.app", Type: "stream"},
		{ID: "sink.out", Type: "sink"},
	}}
	for name, want := range map[string]string{
		"source.app":            "source.app 0",
		"out":                   "sink.out 0",
		"source.app/2":          "source.app 2",
		"source.app/parse_json": "source.app 1",
		"app":                   "several components have that name, say which: source.app, stream.app",
		"nope":                  `no such component "nope"; components: sink.out, source.app, stream.app`,
		"source.app/4":          "source.app has 3 transform steps, not a step 4",
		"source.app/0":          "not a step 0",
		"source.app/set":        "has several set steps; name one by number (source.app/2)",
		"source.app/filter":     `has no "filter" step (steps: parse_json, set, set)`,
	} {
		c, step, err := g.Resolve(name)
		got := c.ID + " " + string(rune('0'+step))
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrUnknownComponent) {
				t.Errorf("%s: %v is not ErrUnknownComponent", name, err)
			}
		}
		if !strings.Contains(got, want) {
			t.Errorf("Resolve(%q) = %q, want %q", name, got, want)
		}
	}
}
