package kafkaclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
)

// TestNewPartitionsLikeJava: a client from New places keyed records with
// Java's formula and honours a partition pinned with partition.Set (kgo's
// default partitioner would hash the pinned record's key instead).
func TestNewPartitionsLikeJava(t *testing.T) {
	t.Parallel()
	const parts = 5
	b := testbroker.Start(t)
	b.CreateTopic("placed", parts, nil)
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{b.Addr}, ClientID: "kafkaclient-test"},
		kafkaclient.Producer(kafkaclient.AcksAll, kgo.NoCompression())...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keyed := []*kgo.Record{{Key: []byte("a")}, {Key: []byte("order-17")}, {Key: []byte{}}}
	pinned := &kgo.Record{Key: []byte("a")}
	pin := int32((partition.ForKey(pinned.Key, parts) + 1) % parts)
	partition.Set(pinned, pin)
	for _, r := range append(keyed, pinned) {
		r.Topic = "placed"
	}
	if err := cl.ProduceSync(ctx, append(keyed, pinned)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range keyed {
		if want := int32(partition.ForKey(r.Key, parts)); r.Partition != want {
			t.Errorf("key %q on partition %d, want %d", r.Key, r.Partition, want)
		}
	}
	if pinned.Partition != pin {
		t.Errorf("pinned record on partition %d, want %d", pinned.Partition, pin)
	}
}

func TestOptionsErrors(t *testing.T) {
	if _, err := kafkaclient.New(kafkaclient.Options{}); !errors.Is(err, kafkaclient.ErrNoBrokers) {
		t.Errorf("no brokers: err = %v, want ErrNoBrokers", err)
	}
	if _, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{"127.0.0.1:1"}, Balancers: []string{"sticky"}}); err == nil {
		t.Error("unknown balancer accepted")
	}
}
