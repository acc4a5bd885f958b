package brokertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
)

// TestCleanerDynamicBackoff: a broker started with a static
// log.cleaner.backoff.ms of one hour does not compact a compacted topic;
// a cluster-default log.cleaner.backoff.ms set through
// IncrementalAlterConfigs (what kafka-configs --alter --entity-default
// sends) makes its log cleaner run at once and every 100 ms after, without
// a restart: the topic read from the start then holds fewer records, the
// last value of every key intact.
func TestCleanerDynamicBackoff(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, testbroker.Config("log.cleaner.backoff.ms", "3600000"))
	const topic, keys, rounds = "compacted", 10, 100
	b.CreateTopic(topic, 1, map[string]*string{
		"cleanup.policy":         kadm.StringPtr("compact"),
		"internal.segment.bytes": kadm.StringPtr("4096"),
	})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(round int) {
		var recs []*kgo.Record
		for k := 0; k < keys; k++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("key-", k)), Value: []byte(fmt.Sprintf("v%d-%s", round, strings.Repeat("x", 100)))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for r := 0; r < rounds; r++ {
		produce(r)
	}
	latest := func() (int, map[string]string) {
		recs := b.ReadAll(topic)
		m := map[string]string{}
		for _, r := range recs {
			m[string(r.Key)] = string(r.Value)
		}
		return len(recs), m
	}
	// The static 1 h backoff: nothing compacted for a while.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if n, _ := latest(); n != keys*rounds {
			t.Fatalf("compacted under a 1 h backoff: %d records of %d", n, keys*rounds)
		}
	}

	adm := kadm.NewClient(b.Client())
	resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.cleaner.backoff.ms", Value: kadm.StringPtr("100")}})
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter cluster default: %v %+v", err, resp)
	}
	check := func() error {
		n, m := latest()
		if n >= keys*rounds/2 {
			return fmt.Errorf("%d records of %d: not compacted yet", n, keys*rounds)
		}
		for k := 0; k < keys; k++ {
			if v := m[fmt.Sprint("key-", k)]; !strings.HasPrefix(v, fmt.Sprintf("v%d-", rounds-1)) {
				t.Fatalf("key-%d: last value %.10q, want round %d", k, v, rounds-1)
			}
		}
		return nil
	}
	testbroker.CheckFor(t, 10*time.Second, check)
	// Rounds go on every 100 ms: newer segments are compacted too.
	n0, _ := latest()
	for r := rounds; r < 2*rounds; r++ {
		produce(r)
	}
	testbroker.CheckFor(t, 10*time.Second, func() error {
		n, m := latest()
		if n > n0+keys*rounds/2 {
			return fmt.Errorf("%d records (%d before the second load): new segments not compacted", n, n0)
		}
		if v := m["key-0"]; !strings.HasPrefix(v, fmt.Sprintf("v%d-", 2*rounds-1)) {
			return fmt.Errorf("key-0 = %.10q", v)
		}
		return nil
	})
}
