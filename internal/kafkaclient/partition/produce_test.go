package partition

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProducerPlacesRecords runs a real kgo producer with Option against an
// in-process kfake cluster and checks where each record landed.
func TestProducerPlacesRecords(t *testing.T) {
	const topic, parts = "placed", 8
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(parts, topic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), Option(), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var recs []*kgo.Record
	for i := 0; i < 200; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i))})
	}
	pinned := &kgo.Record{Key: []byte("k1")}
	Set(pinned, int32((ForKey([]byte("k1"), parts)+3)%parts))
	recs = append(recs, pinned)
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[:200] {
		if want := int32(ForKey(r.Key, parts)); r.Partition != want {
			t.Errorf("key %s landed on %d, want %d", r.Key, r.Partition, want)
		}
	}
	if want := int32((ForKey([]byte("k1"), parts) + 3) % parts); pinned.Partition != want {
		t.Errorf("pinned record landed on %d, want %d", pinned.Partition, want)
	}

	// Keyless records stick to one partition per batch and spread across
	// partitions over many batches.
	used := map[int32]bool{}
	for b := 0; b < 60; b++ {
		r := &kgo.Record{Value: []byte("x")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		used[r.Partition] = true
	}
	if len(used) < 3 {
		t.Errorf("keyless records used only partitions %v over 60 batches", used)
	}

	// A pinned partition that does not exist fails the record.
	bad := &kgo.Record{Value: []byte("x")}
	Set(bad, parts+5)
	if err := cl.ProduceSync(ctx, bad).FirstErr(); err == nil {
		t.Fatal("producing to a missing partition succeeded")
	} else {
		t.Logf("missing partition: %v", err)
	}
}
