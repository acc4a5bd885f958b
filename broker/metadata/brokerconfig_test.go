package metadata

import (
	"context"
	"errors"
	"maps"
	"testing"

	"go.uber.org/zap"
)

func TestBrokerConfigRecords(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFile(dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if got := s.Image().BrokerConfigs(""); got != nil {
		t.Fatalf("empty cluster: %v", got)
	}
	def := map[string]string{"log.retention.ms": "1000", "num.partitions": "3"}
	if err := s.AlterBrokerConfig(ctx, "", def); err != nil {
		t.Fatal(err)
	}
	if err := s.AlterBrokerConfig(ctx, "1", map[string]string{"log.segment.bytes": "1048576"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AlterBrokerConfig(ctx, "2", map[string]string{"num.partitions": "5"}); err != nil {
		t.Fatal(err)
	}
	// The whole set is replaced; an empty set removes the resource.
	if err := s.AlterBrokerConfig(ctx, "2", nil); err != nil {
		t.Fatal(err)
	}
	def["num.partitions"] = "9" // the image keeps its own copy
	im := s.Image()
	if got := im.BrokerConfigs(""); len(got) != 2 || got["num.partitions"] != "3" {
		t.Fatalf("cluster default: %v", got)
	}
	if got := im.BrokerConfigs("2"); got != nil {
		t.Fatalf("broker 2 after removal: %v", got)
	}
	if got := im.BrokerConfigResources(); len(got) != 2 || got[0] != "" || got[1] != "1" {
		t.Fatalf("resources %q", got)
	}
	for _, bad := range []string{"-1", "01", "x", " 1", "+1"} {
		if err := s.AlterBrokerConfig(ctx, bad, map[string]string{"a": "b"}); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("resource %q: %v, want ErrCorruptRecord", bad, err)
		}
	}
	s.Close()
	// Replayed from the file, and rebuilt from a snapshot.
	s2, err := OpenFile(dir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	snap := &Image{}
	for _, r := range s2.Image().Records() {
		if snap, err = snap.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, got := range []*Image{s2.Image(), snap} {
		if !maps.Equal(got.BrokerConfigs(""), im.BrokerConfigs("")) || !maps.Equal(got.BrokerConfigs("1"), im.BrokerConfigs("1")) || len(got.BrokerConfigResources()) != 2 {
			t.Fatalf("rebuilt: %v %v", got.BrokerConfigs(""), got.BrokerConfigs("1"))
		}
	}
}
