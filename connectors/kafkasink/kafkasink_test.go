package kafkasink

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
)

// TestKeysLandWhereJavaPutsThem: the sink's producer places a keyed record
// on toPositive(murmur2(key)) % partitions, the partition Kafka's Java
// client and kcat (-X partitioner=murmur2_random) choose; partition's tests
// hold ForKey to Java's and librdkafka's murmur2 values, and cmd/weir's to
// kcat's placements.
func TestKeysLandWhereJavaPutsThem(t *testing.T) {
	t.Parallel()
	const parts = 6
	b := testbroker.Start(t)
	b.CreateTopic("copied", parts, nil)
	s, err := New(Options{Topic: "copied", Client: kafkaclient.Options{Brokers: []string{b.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var in []*kgo.Record
	for i := range 100 {
		in = append(in, &kgo.Record{Topic: "source", Key: fmt.Appendf(nil, "key-%d", i), Value: []byte("v")})
	}
	in = append(in, &kgo.Record{Topic: "source", Key: []byte{}, Value: []byte("empty key")})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Write(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	out := b.ReadAll("copied")
	if len(out) != len(in) {
		t.Fatalf("read %d records back, wrote %d", len(out), len(in))
	}
	for _, r := range out {
		if want := int32(partition.ForKey(r.Key, parts)); r.Partition != want {
			t.Errorf("key %q on partition %d, Java's client puts it on %d", r.Key, r.Partition, want)
		}
	}
}
