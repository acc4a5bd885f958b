package metadata

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap"
)

func strp(s string) *string { return &s }

func TestClientQuotaRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFile(dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	user := []QuotaEntityPart{{Type: "user", Name: strp("alice")}, {Type: "client-id"}}
	if err := s.AlterClientQuotas(ctx, []ClientQuota{
		{Entity: []QuotaEntityPart{{Type: "client-id", Name: strp("x")}}, Key: "producer_byte_rate", Value: 1024},
		{Entity: user, Key: "consumer_byte_rate", Value: 2048},
		{Entity: user, Key: "request_percentage", Value: 50},
		{Entity: user, Key: "request_percentage", Remove: true},
	}); err != nil {
		t.Fatal(err)
	}
	// The entity's part order does not matter.
	rev := []QuotaEntityPart{user[1], user[0]}
	if got := s.Image().ClientQuota(rev); len(got) != 1 || got["consumer_byte_rate"] != 2048 {
		t.Fatalf("alice + default client: %v", got)
	}
	// Removing the last value removes the entity.
	if err := s.AlterClientQuotas(ctx, []ClientQuota{{Entity: rev, Key: "consumer_byte_rate", Remove: true}}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Image().ClientQuotas()); n != 1 {
		t.Fatalf("%d entities, want 1", n)
	}
	for _, bad := range []ClientQuota{
		{Key: "producer_byte_rate", Value: 1},
		{Entity: []QuotaEntityPart{{Type: "user"}, {Type: "user", Name: strp("a")}}, Key: "k", Value: 1},
		{Entity: []QuotaEntityPart{{Type: "user"}}, Value: 1},
	} {
		if err := s.AlterClientQuotas(ctx, []ClientQuota{bad}); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%+v: %v, want ErrCorruptRecord", bad, err)
		}
	}
	s.Close()
	// Replayed from the file, and rebuilt from a snapshot.
	s2, err := OpenFile(dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := s2.Image().ClientQuota([]QuotaEntityPart{{Type: "client-id", Name: strp("x")}}); got["producer_byte_rate"] != 1024 {
		t.Fatalf("after reopen: %v", got)
	}
	im := &Image{}
	for _, r := range s2.Image().Records() {
		if im, err = im.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if got := im.ClientQuotas(); len(got) != 1 || got[0].Values["producer_byte_rate"] != 1024 {
		t.Fatalf("from snapshot records: %+v", got)
	}
}
