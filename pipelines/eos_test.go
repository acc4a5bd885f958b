package pipelines_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/txntest"
)

const eosStreamsPipeline = `
topic "logs" {
  partitions = 2
}
topic "by_user" {
  partitions = 3
}
topic "per_user" {}
topic "copied" {}

stream "by_user" {
  from         = [topic.logs]
  to           = topic.by_user
  exactly_once = true
  select_key   = record.user
}

stream "per_user" {
  from         = [topic.by_user]
  to           = topic.per_user
  exactly_once = true
  count {}
}

sink "kafka" "copy" {
  from         = [topic.per_user]
  topic        = "copied"
  exactly_once = true
}
`

// TestStreamsExactlyOnce: a stateless stream, an aggregating stream and
// a kafka sink with exactly_once = true, chained. Each writes in
// transactions (its topic holds transaction markers: more offsets than
// committed records), and read_committed each holds its results once:
// every input record re-keyed once, per-user counts ending at the
// number of records, the sink's copy equal to the counts' updates.
func TestStreamsExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", eosStreamsPipeline)
	r := e.streamRunner(t.TempDir())
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	users := []string{"alice", "bob", "carol", "dave", "eve"}
	var recs []*kgo.Record
	for i := range 500 {
		rec := jsonRec(time.Now(), map[string]any{"user": users[i%5], "n": i})
		rec.Key = []byte(fmt.Sprint(i))
		recs = append(recs, rec)
	}
	e.produce("logs", recs...)
	last := func(rs []*kgo.Record) map[string]int64 {
		m := map[string]int64{}
		for _, rec := range rs {
			var v struct{ Count int64 }
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				t.Fatal(err)
			}
			m[string(rec.Key)] = v.Count
		}
		return m
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if err := txntest.SupportsTransactions(e.b.Addr); err != nil {
			return err
		}
		got := last(txntest.ReadCommitted(t, e.b.Addr, "copied"))
		for _, u := range users {
			if got[u] != 100 {
				return fmt.Errorf("copied (read_committed): %v, want 100 for each user", got)
			}
		}
		return nil
	})
	seen := map[float64]int{}
	for _, rec := range txntest.ReadCommitted(t, e.b.Addr, "by_user") {
		var v struct {
			User string
			N    float64
		}
		if err := json.Unmarshal(rec.Value, &v); err != nil || string(rec.Key) != v.User {
			t.Fatalf("by_user: key %q value %s (%v)", rec.Key, rec.Value, err)
		}
		seen[v.N]++
	}
	for i := range 500 {
		if seen[float64(i)] != 1 {
			t.Errorf("record %d is %d times in by_user read_committed, want once", i, seen[float64(i)])
		}
	}
	counts := txntest.ReadCommitted(t, e.b.Addr, "per_user")
	copied := txntest.ReadCommitted(t, e.b.Addr, "copied")
	if len(copied) != len(counts) {
		t.Errorf("copied holds %d records read_committed, per_user %d", len(copied), len(counts))
	}
	prev := map[string]int64{}
	for _, rec := range counts {
		var v struct{ Count int64 }
		json.Unmarshal(rec.Value, &v)
		if v.Count <= prev[string(rec.Key)] {
			t.Errorf("per_user: %s count %d after %d: an update seen twice", rec.Key, v.Count, prev[string(rec.Key)])
		}
		prev[string(rec.Key)] = v.Count
	}
	// Transactions were used: markers take offsets.
	adm := kadm.NewClient(e.b.Client())
	for topic, n := range map[string]int{"by_user": 500, "per_user": len(counts), "copied": len(copied)} {
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		if sum <= int64(n) {
			t.Errorf("%s: %d offsets for %d records: no transaction marker, so not written in transactions", topic, sum, n)
		}
	}
}
