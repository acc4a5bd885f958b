package brokertest

import (
	"context"
	crand "crypto/rand"
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

// TestCleanerDynamicMinCleanableRatio: a topic without an override takes
// min.cleanable.dirty.ratio from log.cleaner.min.cleanable.ratio; with
// Kafka's default 0.5 a log whose dirty part is about a third of it is left
// alone, and a cluster default of 0.1 set through IncrementalAlterConfigs
// gets it compacted without a restart.
func TestCleanerDynamicMinCleanableRatio(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, testbroker.Config("log.cleaner.backoff.ms", "3600000"))
	const topic, keys = "ratio", 10
	b.CreateTopic(topic, 1, map[string]*string{
		"cleanup.policy":         kadm.StringPtr("compact"),
		"internal.segment.bytes": kadm.StringPtr("4096"),
	})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	send := func(key string, size int) {
		v := make([]byte, size) // random: the client's compression keeps the sizes
		crand.Read(v)
		r := &kgo.Record{Key: []byte(key), Value: v}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	churn := func(rounds int) {
		for r := 0; r < rounds; r++ {
			for k := 0; k < keys; k++ {
				send(fmt.Sprint("churn-", k), 100)
			}
		}
	}
	churnRecords := func() int {
		n := 0
		for _, r := range b.ReadAll(topic) {
			if strings.HasPrefix(string(r.Key), "churn-") {
				n++
			}
		}
		return n
	}
	adm := kadm.NewClient(b.Client())
	setDefault := func(name, value string) {
		resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}})
		if err != nil || resp[0].Err != nil {
			t.Fatalf("alter cluster default %s=%s: %v %+v", name, value, err, resp)
		}
	}
	// Superseded churn, then 300 KB of keys written once (the clean part
	// that stays); then one cleaning pass over all of it (a 50 ms backoff
	// from now on).
	churn(50)
	for i := 0; i < 300; i++ {
		send(fmt.Sprint("stable-", i), 1000)
	}
	setDefault("log.cleaner.backoff.ms", "50")
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if n := churnRecords(); n > keys {
			return fmt.Errorf("%d churn records: first compaction not done", n)
		}
		return nil
	})
	c1 := churnRecords()
	// About 100 KB of new churn: a dirty ratio near 0.3, under 0.5.
	churn(60)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if n := churnRecords(); n != c1+60*keys {
			t.Fatalf("dirty ratio under 0.5 compacted: %d churn records, want %d", n, c1+60*keys)
		}
	}
	setDefault("log.cleaner.min.cleanable.ratio", "0.1")
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if n := churnRecords(); n >= c1+59*keys {
			return fmt.Errorf("%d churn records (%d before): not compacted at ratio 0.1", n, c1+60*keys)
		}
		return nil
	})
}
