package streams

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/deadletter"

	"github.com/twmb/franz-go/pkg/kgo"
)

func dlqHeaders(r *kgo.Record) map[string]string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// TestTryOperatorsDeadLetter: stateless operators that fail on a record
// send it (as read from its input topic) to the dead-letter topic with the
// error, and the stream goes on with the next record.
func TestTryOperatorsDeadLetter(t *testing.T) {
	b := NewBuilder()
	in := From(b, "in", String(), String())
	n := TryMapValues(in, func(_ string, v string) (int64, error) { return strconv.ParseInt(v, 10, 64) })
	odd := n.TryFilter(func(_ string, x int64) (bool, error) {
		if x == 13 {
			return false, errors.New("unlucky")
		}
		return x%2 == 1, nil
	})
	TryFlatMap(odd, func(k string, x int64) ([]KeyValue[string, int64], error) {
		if x > 100 {
			return nil, fmt.Errorf("%d is too large", x)
		}
		return []KeyValue[string, int64]{{k + "a", x}, {k + "b", -x}}, nil
	}).To("out", String(), Int64())
	d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "try"})
	for i, v := range []string{"1", "x", "2", "13", "3", "101", "5"} {
		if err := d.Pipe("in", []byte("k"+strconv.Itoa(i)), []byte(v), ts(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := ReadKV(d, "out", String(), Int64())
	want := []KeyValue[string, int64]{{"k0a", 1}, {"k0b", -1}, {"k4a", 3}, {"k4b", -3}, {"k6a", 5}, {"k6b", -5}}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Fatalf("out = %v, want %v", out, want)
	}
	dl := d.Output("try-dlq")
	var got []string
	for _, r := range dl {
		h := dlqHeaders(r)
		if !strings.Contains(h[deadletter.HeaderMessage], ErrOperator.Error()) || h[deadletter.HeaderTopic] != "in" {
			t.Fatalf("dead letter %s: headers %v", r.Value, h)
		}
		got = append(got, fmt.Sprintf("%s@%s", r.Value, h[deadletter.HeaderOffset]))
	}
	if fmt.Sprint(got) != "[x@1 13@3 101@5]" {
		t.Fatalf("dead letters = %v", got)
	}
	var msgs string
	for _, r := range dl {
		msgs += dlqHeaders(r)[deadletter.HeaderMessage] + "\n"
	}
	for _, want := range []string{"TRY-MAPVALUES", "unlucky", "101 is too large"} {
		if !strings.Contains(msgs, want) {
			t.Fatalf("dead-letter errors do not mention %q", want)
		}
	}
	if m := d.Metrics()[0]; m.DeadLetters != 3 || m.Processed != 7 {
		t.Fatalf("metrics = %+v", m)
	}
}

// TestTryAggregationsDeadLetter: an aggregator that fails leaves the
// aggregate as it was (for hopping windows: every window of the record;
// for sessions: no merge) and dead-letters the record, through a
// repartition topic; an operator failing on a table update emitted by a
// cache flush dead-letters the store entry.
func TestTryAggregationsDeadLetter(t *testing.T) {
	b := NewBuilder()
	type ev struct {
		K string
		N int64
	}
	in := From(b, "in", String(), JSON[ev]())
	g := GroupBy(in, func(_ string, e ev) string { return e.K }, String(), JSON[ev]())
	sum := func(_ string, e ev, a int64) (int64, error) {
		if e.N < 0 {
			return a, fmt.Errorf("negative amount %d", e.N)
		}
		return a + e.N, nil
	}
	zero := func() int64 { return 0 }
	tbl := TryAggregate(g, "sum", zero, sum, Int64())
	TryMapValues(tbl.ToStream(), func(k string, a int64) (int64, error) {
		if k == "boom" {
			return 0, errors.New("no output for boom")
		}
		return a, nil
	}).To("sums", String(), Int64())
	hop := TimeWindows{Size: 30 * time.Millisecond, Advance: 10 * time.Millisecond}
	TryAggregateWindowed(WindowedBy(g, hop), "hsum", zero, sum, Int64()).To("hsums", WindowedKey(String()), Int64())
	merge := func(_ string, a, b int64) (int64, error) {
		if a+b > 1000 {
			return 0, errors.New("session too large")
		}
		return a + b, nil
	}
	TryAggregateSessions(SessionWindowedBy(g, SessionWindows{Gap: 15 * time.Millisecond, Grace: 50 * time.Millisecond}), "ssum", zero, sum, merge, Int64()).
		To("ssums", WindowedKey(String()), Int64())
	d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "ta", Partitions: map[string]int32{"in": 2}})
	pipe := func(i int, k string, n int64, at int64) {
		t.Helper()
		if err := PipeKV(d, "in", String(), JSON[ev](), strconv.Itoa(i), ev{k, n}, ts(at)); err != nil {
			t.Fatal(err)
		}
	}
	pipe(0, "a", 5, 100)
	pipe(1, "a", -1, 101) // fails in all three aggregations
	pipe(2, "a", 7, 102)
	pipe(3, "big", 600, 200)
	pipe(4, "big", 600, 220) // a separate session (gap 15ms)
	pipe(5, "big", 1, 210)   // bridges both: merge fails (1200 > 1000)
	pipe(6, "boom", 1, 300)  // fine in the store, fails downstream at the flush
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	sums := lastValues(t, d, "sums")
	if fmt.Sprint(sums) != "map[a:12 big:1201]" {
		t.Fatalf("sums = %v", sums)
	}
	hs, _ := ReadKV(d, "hsums", WindowedKey(String()), Int64())
	hlast := map[string]int64{}
	for _, kv := range hs {
		hlast[fmt.Sprintf("%s@%d", kv.Key.Key, kv.Key.Start.UnixMilli())] = kv.Value
	}
	// a's records at 100 and 102 fall in windows starting 80, 90, 100.
	for _, w := range []string{"a@80", "a@90", "a@100"} {
		if hlast[w] != 12 {
			t.Fatalf("hopping window %s = %d, want 12 (the failing record in none): %v", w, hlast[w], hlast)
		}
	}
	sl := map[string]int64{}
	for _, r := range d.Output("ssums") {
		w, err := WindowedKey(String()).Decode(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%s@%d-%d", w.Key, w.Start.UnixMilli(), w.End.UnixMilli())
		if r.Value == nil { // a session merged into another
			delete(sl, id)
			continue
		}
		sl[id], _ = Int64().Decode(r.Value)
	}
	if sl["big@200-200"] != 600 || sl["big@220-220"] != 600 || sl["a@100-102"] != 12 {
		t.Fatalf("sessions = %v (want big's two sessions unmerged and a's without the failing record)", sl)
	}
	var msgs []string
	for _, r := range d.Output("ta-dlq") {
		h := dlqHeaders(r)
		msgs = append(msgs, h[deadletter.HeaderTopic]+": "+h[deadletter.HeaderMessage])
	}
	all := strings.Join(msgs, "\n")
	if len(msgs) != 5 || strings.Count(all, "negative amount -1") != 3 || !strings.Contains(all, "session too large") ||
		!strings.Contains(all, "ta-sum-changelog: ") || !strings.Contains(all, "no output for boom") {
		t.Fatalf("dead letters:\n%s", all)
	}
	if !strings.Contains(all, "ta-sum-repartition: "+ErrOperator.Error()+": TRY-AGGREGATE-sum") {
		t.Fatalf("dead letters do not name the repartition record and the operator:\n%s", all)
	}
}
