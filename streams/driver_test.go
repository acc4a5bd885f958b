package streams

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/deadletter"
	"weir/internal/kafkaclient/partition"
	"weir/streams/internal/store"
)

func ts(ms int64) time.Time { return time.UnixMilli(ms) }

func mustBuild(t *testing.T, b *Builder) *Topology {
	t.Helper()
	tp, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func mustDriver(t *testing.T, tp *Topology, cfg DriverConfig) *TestDriver {
	t.Helper()
	d, err := NewTestDriver(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDriverStatelessOperators(t *testing.T) {
	b := NewBuilder()
	in := From(b, "in", String(), String())
	var peeked []string
	words := FlatMapValues(in, func(_ string, line string) []string { return strings.Fields(line) }).
		Peek(func(k, w string) { peeked = append(peeked, w) })
	parts := words.Branch(
		func(_, w string) bool { return strings.HasPrefix(w, "#") },
		func(_, w string) bool { return len(w) > 3 },
	)
	tags := MapValues(parts[0], func(_, w string) string { return strings.TrimPrefix(w, "#") })
	long := Map(parts[1], func(k, w string) (string, int64) { return strings.ToUpper(w), int64(len(w)) }).
		Filter(func(_ string, n int64) bool { return n < 10 })
	long.To("long", String(), Int64())
	tags.Merge(SelectKey(parts[1], func(_, w string) string { return "sel" })).FilterNot(func(_, w string) bool { return w == "skip" }).To("mixed", String(), String())
	d := mustDriver(t, mustBuild(t, b), DriverConfig{})

	for i, line := range []string{"a #x word", "#skip longer verylongword12", "tiny #y"} {
		if err := d.Pipe("in", []byte("k"+strconv.Itoa(i)), []byte(line), ts(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	gotLong, err := ReadKV(d, "long", String(), Int64())
	if err != nil {
		t.Fatal(err)
	}
	wantLong := []KeyValue[string, int64]{{"WORD", 4}, {"LONGER", 6}, {"TINY", 4}}
	if !slices.Equal(gotLong, wantLong) {
		t.Fatalf("long = %v, want %v", gotLong, wantLong)
	}
	gotMixed, _ := ReadKV(d, "mixed", String(), String())
	wantMixed := []KeyValue[string, string]{{"k0", "x"}, {"sel", "word"}, {"sel", "longer"}, {"sel", "verylongword12"}, {"sel", "tiny"}, {"k2", "y"}}
	if !slices.Equal(gotMixed, wantMixed) {
		t.Fatalf("mixed = %v, want %v", gotMixed, wantMixed)
	}
	if len(peeked) != 8 {
		t.Fatalf("peek saw %d words, want 8: %v", len(peeked), peeked)
	}
}

// TestDriverGroupByRepartitions: a count after a key change goes through
// the repartition topic, partitioned by the new key with murmur2.
func TestDriverGroupByRepartitions(t *testing.T) {
	b := NewBuilder()
	in := From(b, "clicks", String(), String())
	Count(GroupBy(in, func(_, page string) string { return page }, String(), String()), "per-page").
		ToStream().To("page-counts", String(), Int64())
	tp := mustBuild(t, b)
	d := mustDriver(t, tp, DriverConfig{AppID: "app", Partitions: map[string]int32{"clicks": 3}})
	want := map[string]int64{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		page := "p" + strconv.Itoa(r.IntN(20))
		want[page]++
		if err := d.Pipe("clicks", []byte("user"+strconv.Itoa(i%7)), []byte(page), ts(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	rep := d.Output("app-per-page-repartition")
	if len(rep) != 500 {
		t.Fatalf("repartition topic has %d records, want 500", len(rep))
	}
	for _, rr := range rep {
		if p := int32(partition.ForKey(rr.Key, 3)); p != rr.Partition {
			t.Fatalf("repartition record %s in partition %d, murmur2 says %d", rr.Key, rr.Partition, p)
		}
	}
	got := lastValues(t, d, "page-counts")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
	// The changelog holds the same final values (last entry per key).
	cl := map[string]int64{}
	for _, rr := range d.Output("app-per-page-changelog") {
		if isMarker(rr) {
			continue
		}
		n, _ := Int64().Decode(rr.Value)
		cl[string(rr.Key)] = n
	}
	if fmt.Sprint(cl) != fmt.Sprint(want) {
		t.Fatalf("changelog = %v, want %v", cl, want)
	}
}

func lastValues(t *testing.T, d *TestDriver, topic string) map[string]int64 {
	t.Helper()
	kvs, err := ReadKV(d, topic, String(), Int64())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, kv := range kvs {
		got[kv.Key] = kv.Value
	}
	return got
}

// TestDriverCrashReplayIsExact kills the tasks at many points, including in
// the middle of a flush (some changelog entries written, no marker), and
// checks that after restore + redelivery of the uncommitted input the
// counts are exact: the restored state stops at the last marker, the
// orphaned entries are rewritten, and the replay starts at the marker.
func TestDriverCrashReplayIsExact(t *testing.T) {
	b := NewBuilder()
	in := From(b, "events", String(), Bytes())
	Count(GroupByKey(in, String(), Bytes()), "counts").ToStream().To("out", String(), Int64())
	tp := mustBuild(t, b)
	// Small cache: flushes happen mid-interval too (eviction).
	d := mustDriver(t, tp, DriverConfig{AppID: "x", Partitions: map[string]int32{"events": 2}, CommitEvery: 37, CacheMaxBytes: 2000})
	r := rand.New(rand.NewPCG(3, 4))
	want := map[string]int64{}
	for i := range 5000 {
		k := "k" + strconv.Itoa(r.IntN(50))
		want[k]++
		if err := d.Pipe("events", []byte(k), nil, ts(int64(i))); err != nil {
			t.Fatal(err)
		}
		if i%611 == 300 {
			// Die after a few more writes: mid-flush or mid-batch.
			d.dropAfter = 1 + r.IntN(40)
		}
		if i%611 == 320 {
			if err := d.Crash(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	got := lastValues(t, d, "out")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts after crashes = %v\nwant %v", got, want)
	}
	var skipped int64
	for _, m := range d.Metrics() {
		skipped += m.SkippedReplayed
	}
	t.Logf("replayed records skipped as already in restored state: %d", skipped)
}

func TestDriverDeadLetters(t *testing.T) {
	b := NewBuilder()
	type ev struct{ N int }
	in := From(b, "in", String(), JSON[ev]())
	MapValues(in, func(_ string, e ev) int64 { return int64(e.N * 2) }).To("out", String(), Int64())
	d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "dl"})
	for i, v := range []string{`{"N":1}`, `{"N":`, `{"N":3}`} {
		if err := d.Pipe("in", []byte("k"), []byte(v), ts(int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := ReadKV(d, "out", String(), Int64())
	if len(out) != 2 || out[0].Value != 2 || out[1].Value != 6 {
		t.Fatalf("out = %v", out)
	}
	dl := d.Output("dl-dlq")
	if len(dl) != 1 || string(dl[0].Value) != `{"N":` {
		t.Fatalf("dead letters = %v", dl)
	}
	h := map[string]string{}
	for _, x := range dl[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if h[deadletter.HeaderTopic] != "in" || h[deadletter.HeaderOffset] != "1" || !strings.Contains(h[deadletter.HeaderMessage], "decode failed") {
		t.Fatalf("dead-letter headers = %v", h)
	}
	if m := d.Metrics()[0]; m.DeadLetters != 1 || m.Processed != 3 {
		t.Fatalf("metrics = %+v", m)
	}
}

func TestBuildErrors(t *testing.T) {
	b := NewBuilder()
	a := From(b, "a", String(), String())
	c := From(b, "c", String(), String())
	From(b, "a", String(), String())
	_ = a.Merge(c)
	if _, err := b.Build(); !errors.Is(err, ErrTopology) || !strings.Contains(err.Error(), `"a" is already a source`) {
		t.Fatalf("duplicate source: %v", err)
	}
	// A merge of two topics is repartitioned before grouping, so the store
	// has one owner.
	b = NewBuilder()
	a = From(b, "a", String(), String())
	c = From(b, "c", String(), String())
	Count(GroupByKey(a.Merge(c), String(), String()), "n")
	tp, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tp.String(), "REPARTITION-SINK-n-repartition") {
		t.Fatalf("merge not repartitioned:\n%s", tp)
	}
	b = NewBuilder()
	Count(GroupByKey(From(b, "a", String(), String()), String(), String()), "")
	if _, err := b.Build(); !errors.Is(err, ErrTopology) {
		t.Fatalf("unnamed store: %v", err)
	}
}

// TestDriverRepartitionReplayIsExact crashes a topology whose count reads
// a repartition topic, between commits and in the middle of flushes: each
// crash replays the upstream's uncommitted input, which writes its
// repartition records again. The copies are in the repartition topic but
// the count skips them (source positions, dedupe.go), so the counts are
// exact. FlatMap writes two repartition records per input record, so a
// position must tell them apart (the sequence number, not the offset
// alone).
func TestDriverRepartitionReplayIsExact(t *testing.T) {
	b := NewBuilder()
	in := From(b, "pairs", String(), String())
	// value "<k1>,<k2>/<seq>" → records (k1, "<seq>.0") and (k2, "<seq>.1")
	split := FlatMap(in, func(_ string, v string) []KeyValue[string, string] {
		ks, seq, _ := strings.Cut(v, "/")
		k1, k2, _ := strings.Cut(ks, ",")
		return []KeyValue[string, string]{{k1, seq + ".0"}, {k2, seq + ".1"}}
	})
	Count(GroupByKey(split, String(), String()), "n").ToStream().To("out", String(), Int64())
	d := mustDriver(t, mustBuild(t, b), DriverConfig{AppID: "rp", Partitions: map[string]int32{"pairs": 3}, CommitEvery: 23, CacheMaxBytes: 3000})
	r := rand.New(rand.NewPCG(9, 10))
	want := map[string]int64{}
	var dupSkips, crashes int64
	sum := func() {
		for _, m := range d.Metrics() {
			dupSkips += m.SkippedDuplicates
		}
	}
	for i := range 4000 {
		k1, k2 := "k"+strconv.Itoa(r.IntN(40)), "k"+strconv.Itoa(r.IntN(40))
		want[k1]++
		want[k2]++
		if err := d.Pipe("pairs", []byte(strconv.Itoa(i%13)), []byte(k1+","+k2+"/"+strconv.Itoa(i)), ts(int64(i))); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%397 == 200:
			d.dropAfter = 1 + r.IntN(30) // die mid-flush later
		case i%397 == 210, i%251 == 100: // crash with writes since the last commit
			sum()
			crashes++
			if err := d.Crash(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	sum()
	got := lastValues(t, d, "out")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts after %d crashes = %v\nwant %v", crashes, got, want)
	}
	copies := map[string]int{}
	var extra int64
	for _, rr := range d.Output("rp-n-repartition") {
		if copies[string(rr.Value)]++; copies[string(rr.Value)] > 1 {
			extra++
		}
	}
	if len(copies) != 8000 {
		t.Fatalf("repartition topic holds %d distinct records, want 8000", len(copies))
	}
	if extra == 0 {
		t.Fatal("no record was written twice to the repartition topic: the crashes did not replay upstream writes")
	}
	// A copy is skipped at least once; a crash of the count task itself
	// may replay (and skip) it again.
	if dupSkips < extra {
		t.Fatalf("%d copies in the repartition topic, %d skipped as duplicates", extra, dupSkips)
	}
	t.Logf("%d crashes: %d copies in the repartition topic, %d duplicate skips, counts exact", crashes, extra, dupSkips)
}

func TestMarkerAndSourceEncoding(t *testing.T) {
	id := sourceID("app-x-repartition", 7)
	tk := &task{srcID: id, curOffset: 1 << 40, seq: 3}
	h := tk.sourceHeader()
	gid, pos, ok := parseSource(h.Value)
	if !ok || string(gid) != string(id) || pos != (srcPos{off: 1 << 40, seq: 3}) || tk.seq != 4 {
		t.Fatalf("parseSource = %x %+v %v", gid, pos, ok)
	}
	if _, _, ok := parseSource(h.Value[:len(h.Value)-1]); ok {
		t.Fatal("truncated source header parsed")
	}
	seen := map[string]*srcPos{string(id): {off: 5, seq: 1}, string(sourceID("b", 0)): {off: 9}}
	m := markerRecord("cl", 0, 42, -3, seen)
	off, st, got, err := parseMarker(m.Value)
	if err != nil || off != 42 || st != -3 || len(got) != 2 || got[string(id)].off != 5 || got[string(id)].seq != 1 || got[string(id)].id != string(id) {
		t.Fatalf("parseMarker v2 = %d %d %v %v", off, st, got, err)
	}
	off, st, got, err = parseMarker(markerRecord("cl", 0, 42, 8, nil).Value)
	if err != nil || off != 42 || st != 8 || got != nil {
		t.Fatalf("parseMarker v1 = %d %d %v %v", off, st, got, err)
	}
	if _, _, _, err := parseMarker(m.Value[:len(m.Value)-1]); err == nil {
		t.Fatal("truncated marker parsed")
	}
}

// TestSourcePositionsSurviveCheckpoint: a task closed cleanly checkpoints
// its stores with their source positions, so the next owner on the same
// machine (restoring from the checkpoint, not from the changelog's last
// marker) still skips copies of records it applied.
func TestSourcePositionsSurviveCheckpoint(t *testing.T) {
	b := NewBuilder()
	Count(GroupBy(From(b, "in", String(), String()), func(_, v string) string { return v }, String(), String()), "n")
	tp := mustBuild(t, b)
	var src *node
	for _, s := range tp.sources {
		if s.source.internal {
			src = s
		}
	}
	dir := t.TempDir()
	open := func() *task {
		tk := tp.newTask("cp", src, 0)
		tk.out = &nullProducer{}
		tk.cacheMax = 1 << 20
		tk.stateDir = dir
		tk.openBack = func(dir string) (store.Backend, error) { return store.OpenPebble(dir, store.PebbleOptions{}) }
		if err := tk.open(nullReader{}); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	up := &task{srcID: sourceID("in", 3)}
	rec := func(off, inOff int64) *kgo.Record {
		up.curOffset, up.seq = inOff, 0
		return &kgo.Record{Topic: "cp-n-repartition", Offset: off, Key: []byte("k"), Value: []byte("k"),
			Headers: []kgo.RecordHeader{up.sourceHeader()}}
	}
	tk := open()
	for i := range int64(5) {
		tk.process(rec(i, 100+i))
	}
	if err := tk.flush(); err != nil {
		t.Fatal(err)
	}
	if err := tk.close(true); err != nil {
		t.Fatal(err)
	}
	tk = open()
	if got := tk.stores[0].applied; got != 5 {
		t.Fatalf("restored from the checkpoint at input offset %d, want 5", got)
	}
	tk.process(rec(5, 103)) // a copy of input offset 103, replayed upstream
	tk.process(rec(6, 105)) // new
	if m := tk.metrics(); m.SkippedDuplicates != 1 {
		t.Fatalf("skipped %d duplicates, want 1", m.SkippedDuplicates)
	}
	v, ok, err := tk.stores[0].st.Get([]byte("k"))
	if n, _ := Int64().Decode(v); err != nil || !ok || n != 6 {
		t.Fatalf("count = %d (%v %v), want 6", n, ok, err)
	}
	tk.close(false)
}
