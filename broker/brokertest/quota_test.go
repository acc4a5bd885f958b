package brokertest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleHook records which brokers throttled the client.
type throttleHook struct {
	mu  sync.Mutex
	ids map[int32]bool
}

func (h *throttleHook) OnBrokerThrottle(m kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.mu.Lock()
		h.ids[m.NodeID] = true
		h.mu.Unlock()
	}
}

// TestQuotaCluster: a client quota set through one broker reaches every
// broker through the controller and each enforces it on the partitions
// it leads; acks=all produces still complete (follower fetches are never
// throttled).
func TestQuotaCluster(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, BrokerConfig(map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c.CreateTopic("quota-cluster", 3, 3, nil)
	res, err := kadm.NewClient(c.Client()).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id"}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 20000}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %+v", err, res)
	}
	c.WaitFor(20*time.Second, func() error {
		for id := int32(1); id <= 3; id++ {
			if n := len(c.Broker(id).Image().ClientQuotas()); n != 1 {
				return fmt.Errorf("broker %d has %d quota entities", id, n)
			}
		}
		return nil
	})
	h := &throttleHook{ids: map[int32]bool{}}
	cl := c.Client(kgo.ClientID("quota-cluster-client"), kgo.WithHooks(h), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	val := bytes.Repeat([]byte{'q'}, 30000) // over 20 kB/s at once
	for p := int32(0); p < 3; p++ {         // each partition has another leader
		for range 2 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quota-cluster", Partition: p, Value: val}).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", p, err)
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ids) != 3 {
		t.Fatalf("throttled by brokers %v, want all three", h.ids)
	}
	// Every broker describes the quota.
	for id := 1; id <= 3; id++ {
		r, err := cl.Broker(id).Request(ctx, kmsg.NewPtrDescribeClientQuotasRequest())
		resp, _ := r.(*kmsg.DescribeClientQuotasResponse)
		if err != nil || resp == nil || len(resp.Entries) != 1 || resp.Entries[0].Values[0].Value != 20000 {
			t.Fatalf("DescribeClientQuotas on broker %d: %v %+v", id, err, resp)
		}
	}
}
