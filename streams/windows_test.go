package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/deadletter"
	"weir/internal/kafkaclient/partition"
)

type winID struct {
	key        string
	start, end int64
}

// refWindows is the reference for TimeWindows: a plain simulation of the
// documented rules over each partition's records in order.
func refWindows(recs []refRec, parts int, size, adv, grace int64) (final map[winID]int64, closed map[winID]bool, late int64) {
	counts := map[winID]int64{}
	closed = map[winID]bool{}
	st := map[int]int64{}
	for p := range parts {
		st[p] = -1 << 62
	}
	for _, r := range recs {
		p := partition.ForKey([]byte(r.key), parts)
		st[p] = max(st[p], r.ts)
		for start := int64(0); start <= r.ts; start += adv {
			end := start + size
			if r.ts < start || r.ts >= end {
				continue
			}
			w := winID{r.key, start, end}
			if end+grace <= st[p] {
				late++
				continue
			}
			counts[w]++
		}
	}
	for w := range counts {
		if w.end+grace <= st[partition.ForKey([]byte(w.key), parts)] {
			closed[w] = true
		}
	}
	return counts, closed, late
}

type refRec struct {
	key string
	ts  int64
}

func genOutOfOrder(seed uint64, n int, keys int, maxDelay int64) []refRec {
	r := rand.New(rand.NewPCG(seed, seed+1))
	var out []refRec
	clock := int64(1000)
	for range n {
		clock += int64(r.IntN(20))
		t := clock
		if r.IntN(4) == 0 { // a quarter arrive late, some past any grace
			t -= int64(r.IntN(int(maxDelay)))
		}
		out = append(out, refRec{key: "k" + strconv.Itoa(r.IntN(keys)), ts: max(0, t)})
	}
	return out
}

func TestWindowedCountsMatchReference(t *testing.T) {
	for _, tc := range []struct {
		name             string
		size, adv, grace int64
		parts            int
	}{
		{"tumbling", 100, 100, 50, 2},
		{"hopping", 300, 100, 120, 3},
		{"tumbling-no-grace", 250, 250, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			in := From(b, "ev", String(), Bytes())
			w := TimeWindows{Size: time.Duration(tc.size) * time.Millisecond, Advance: time.Duration(tc.adv) * time.Millisecond,
				Grace: time.Duration(tc.grace) * time.Millisecond, EmitFinal: true}
			CountWindowed(WindowedBy(GroupByKey(in, String(), Bytes()), w), "win").To("out", WindowedKey(String()), Int64())
			d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "w", Partitions: map[string]int32{"ev": int32(tc.parts)}, CommitEvery: 50})
			recs := genOutOfOrder(uint64(tc.size+tc.adv), 4000, 7, 600)
			for _, r := range recs {
				if err := d.Pipe("ev", []byte(r.key), nil, time.UnixMilli(r.ts)); err != nil {
					t.Fatal(err)
				}
			}
			counts, closed, late := refWindows(recs, tc.parts, tc.size, tc.adv, tc.grace)
			got := map[winID]int64{}
			kvs, err := ReadKV(d, "out", WindowedKey(String()), Int64())
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range kvs {
				id := winID{kv.Key.Key, kv.Key.Start.UnixMilli(), kv.Key.End.UnixMilli()}
				if _, dup := got[id]; dup {
					t.Fatalf("window %v emitted twice with emit-final", id)
				}
				got[id] = kv.Value
			}
			want := map[winID]int64{}
			for w := range closed {
				want[w] = counts[w]
			}
			if !maps.Equal(got, want) {
				t.Fatalf("emitted %d windows, reference %d closed windows; first differences: %v", len(got), len(want), diff(got, want))
			}
			var gotLate int64
			for _, m := range d.Metrics() {
				gotLate += m.LateDropped
			}
			if gotLate != late || late == 0 {
				t.Fatalf("late metric = %d, reference %d (want > 0)", gotLate, late)
			}
			t.Logf("%d windows emitted, %d late (record, window) pairs dropped", len(got), late)
		})
	}
}

func diff(got, want map[winID]int64) []string {
	var out []string
	for k, v := range want {
		if got[k] != v {
			out = append(out, fmt.Sprintf("%v got %d want %d", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%v got %d, not closed in reference", k, v))
		}
	}
	slices.Sort(out)
	return out[:min(len(out), 5)]
}

// refSessions simulates the documented session rules on one partition.
func refSessions(recs []refRec, gap, grace int64) (final map[winID]int64, late int64) {
	type sess struct {
		start, end, n int64
	}
	open := map[string][]sess{}
	final = map[winID]int64{}
	st := int64(-1 << 62)
	for _, r := range recs {
		st = max(st, r.ts)
		if r.ts < st-grace {
			late++
		} else {
			m := sess{r.ts, r.ts, 1}
			var keep []sess
			for _, s := range open[r.key] {
				if s.start-gap <= r.ts && r.ts <= s.end+gap {
					m.start, m.end, m.n = min(m.start, s.start), max(m.end, s.end), m.n+s.n
				} else {
					keep = append(keep, s)
				}
			}
			open[r.key] = append(keep, m)
		}
		for k, ss := range open {
			var keep []sess
			for _, s := range ss {
				if s.end+gap+grace < st {
					final[winID{k, s.start, s.end}] = s.n
				} else {
					keep = append(keep, s)
				}
			}
			open[k] = keep
		}
	}
	return final, late
}

func TestSessionCountsMatchReference(t *testing.T) {
	b := NewBuilder()
	in := From(b, "ev", String(), Bytes())
	CountSessions(SessionWindowedBy(GroupByKey(in, String(), Bytes()), SessionWindows{Gap: 40 * time.Millisecond, Grace: 30 * time.Millisecond, EmitFinal: true}), "sess").
		To("out", WindowedKey(String()), Int64())
	d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "s", CommitEvery: 10})
	r := rand.New(rand.NewPCG(9, 9))
	var recs []refRec
	clock := int64(0)
	for range 3000 {
		clock += int64(r.IntN(15))
		ts := clock
		if r.IntN(5) == 0 {
			ts -= int64(r.IntN(100))
		}
		recs = append(recs, refRec{"k" + strconv.Itoa(r.IntN(5)), max(0, ts)})
	}
	for _, rr := range recs {
		if err := d.Pipe("ev", []byte(rr.key), nil, time.UnixMilli(rr.ts)); err != nil {
			t.Fatal(err)
		}
	}
	want, late := refSessions(recs, 40, 30)
	kvs, err := ReadKV(d, "out", WindowedKey(String()), Int64())
	if err != nil {
		t.Fatal(err)
	}
	got := map[winID]int64{}
	for _, kv := range kvs {
		got[winID{kv.Key.Key, kv.Key.Start.UnixMilli(), kv.Key.End.UnixMilli()}] = kv.Value
	}
	if !maps.Equal(got, want) {
		t.Fatalf("sessions: got %d, reference %d; %v", len(got), len(want), diff(got, want))
	}
	if m := d.Metrics()[0]; m.LateDropped != late || late == 0 {
		t.Fatalf("late = %d, reference %d", m.LateDropped, late)
	}
	t.Logf("%d sessions, %d late records", len(got), late)
}

// TestEventTimeWindowsMatchReference: the event time is a field of the
// value (EventTime), the Kafka timestamps say nothing useful (they run
// backwards), and the key is taken from the value, so the windows are
// counted behind a repartition topic, which must carry the event time.
// Out-of-order and late records as in TestWindowedCountsMatchReference;
// records without a usable time go to the dead-letter topic.
func TestEventTimeWindowsMatchReference(t *testing.T) {
	type ev struct {
		K  string
		At *int64
	}
	for _, tc := range []struct {
		name             string
		size, adv, grace int64
		parts            int
	}{
		{"tumbling", 100, 100, 50, 2},
		{"hopping", 300, 100, 120, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder()
			in := From(b, "ev", String(), JSON[ev](), EventTime(func(_ string, e ev, _ time.Time) (time.Time, error) {
				if e.At == nil {
					return time.Time{}, errors.New("field At is missing")
				}
				return time.UnixMilli(*e.At), nil
			}))
			w := TimeWindows{Size: time.Duration(tc.size) * time.Millisecond, Advance: time.Duration(tc.adv) * time.Millisecond,
				Grace: time.Duration(tc.grace) * time.Millisecond, EmitFinal: true}
			g := GroupBy(in, func(_ string, e ev) string { return e.K }, String(), JSON[ev]())
			CountWindowed(WindowedBy(g, w), "win").To("out", WindowedKey(String()), Int64())
			d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "et", Partitions: map[string]int32{"ev": int32(tc.parts)}, CommitEvery: 50})
			recs := genOutOfOrder(uint64(tc.size+tc.adv), 4000, 7, 600)
			var bad int
			for i, r := range recs {
				v, _ := json.Marshal(ev{K: r.key, At: &r.ts})
				if i%97 == 5 {
					v, bad = []byte(`{"K":"`+r.key+`"}`), bad+1 // no time: dead-lettered, not counted
				}
				if i%131 == 7 {
					v, bad = []byte(`{"K":"`+r.key+`","At":-5}`), bad+1 // before the epoch
				}
				// Kafka timestamps run backwards from far in the future.
				if err := d.Pipe("ev", []byte(strconv.Itoa(i)), v, time.UnixMilli(1e13-int64(i))); err != nil {
					t.Fatal(err)
				}
			}
			var good []refRec
			for i, r := range recs {
				if i%97 != 5 && i%131 != 7 {
					good = append(good, r)
				}
			}
			counts, closed, late := refWindows(good, tc.parts, tc.size, tc.adv, tc.grace)
			got := map[winID]int64{}
			kvs, err := ReadKV(d, "out", WindowedKey(String()), Int64())
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range kvs {
				got[winID{kv.Key.Key, kv.Key.Start.UnixMilli(), kv.Key.End.UnixMilli()}] = kv.Value
			}
			want := map[winID]int64{}
			for w := range closed {
				want[w] = counts[w]
			}
			if !maps.Equal(got, want) {
				t.Fatalf("emitted %d windows, reference %d closed windows; first differences: %v", len(got), len(want), diff(got, want))
			}
			var gotLate, dead int64
			for _, m := range d.Metrics() {
				gotLate += m.LateDropped
				dead += m.DeadLetters
			}
			if gotLate != late || late == 0 {
				t.Fatalf("late metric = %d, reference %d (want > 0)", gotLate, late)
			}
			dl := d.Output("et-dlq")
			if int(dead) != bad || len(dl) != bad {
				t.Fatalf("%d dead letters (metric %d), want %d", len(dl), dead, bad)
			}
			for _, r := range dl {
				for _, h := range r.Headers {
					if h.Key == deadletter.HeaderMessage && !strings.Contains(string(h.Value), ErrEventTime.Error()) {
						t.Fatalf("dead letter %s: error %q", r.Value, h.Value)
					}
				}
			}
			t.Logf("%d windows emitted, %d late (record, window) pairs dropped, %d records without event time dead-lettered", len(got), late, bad)
		})
	}
}
