package pipelines_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/pipelines"
)

// streamRunner is e.runner with its own state directory and a short
// commit interval for aggregating streams.
func (e *env) streamRunner(stateDir string) *pipelines.Runner {
	e.t.Helper()
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, SchemaRegistry: e.reg,
		Logger: zaptest.NewLogger(e.t, zaptest.Level(zap.WarnLevel)), RestartBackoff: 200 * time.Millisecond,
		StateDir: stateDir, StreamsCommitInterval: 200 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(r.Stop)
	return r
}

// produce writes records in order (one partition keeps their order).
func (e *env) produce(topic string, recs ...*kgo.Record) {
	e.t.Helper()
	cl := e.b.Client()
	defer cl.Close()
	for _, r := range recs {
		r.Topic = topic
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		e.t.Fatal(err)
	}
}

func jsonRec(ts time.Time, v map[string]any) *kgo.Record {
	b, _ := json.Marshal(v)
	return &kgo.Record{Value: b, Timestamp: ts}
}

func statusOf(r *pipelines.Runner, id string) pipelines.Status {
	for _, s := range r.Status() {
		if s.ID == id {
			return s
		}
	}
	return pipelines.Status{}
}

const windowedCount = `
topic "app_logs" {}
topic "error_counts" {}

stream "errors_per_service" {
  from = [topic.app_logs]
  to   = topic.error_counts

  filter {
    condition = lower(record.level) == "error"
    on_error  = "dead_letter"
  }
  group_by = record.service
  window "tumbling" {
    size  = "1m"
    grace = "10s"
    emit  = "final"
  }
  count {}
}
`

// TestStreamWindowedCount is "errors per service per minute" over
// records whose event times are out of order, some of them later than
// the grace period: the emitted counts equal a reference computed here
// with the documented window rules (stream time = the largest timestamp
// seen by the aggregating task; a window [s, s+1m) closes when stream
// time reaches s+1m+10s; a record for a closed window is late: dropped
// and counted), each closed window is emitted once, the late records
// show in the stream's Late status, and a record the filter fails on
// goes to the dead-letter topic while the stream keeps running.
func TestStreamWindowedCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", windowedCount)
	r := e.streamRunner(t.TempDir())
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewSource(7))
	services := []string{"checkout", "search", "auth"}
	type wkey struct {
		svc   string
		start int64
	}
	want := map[wkey]int64{}
	var st int64 // stream time of the aggregating task (error records only)
	late := 0
	var recs []*kgo.Record
	add := func(ts time.Time, level, svc string) {
		recs = append(recs, jsonRec(ts, map[string]any{"level": level, "service": svc, "msg": "m"}))
		if level != "error" && level != "ERROR" {
			return
		}
		ms := ts.UnixMilli()
		st = max(st, ms)
		start := ms / 60000 * 60000
		if start+60000+10000 <= st {
			late++
			return
		}
		want[wkey{svc, start}]++
	}
	for i := range 1500 {
		ts := t0.Add(time.Duration(i) * 400 * time.Millisecond)
		switch {
		case i%50 == 7:
			ts = ts.Add(-2 * time.Minute) // late: past the grace period
		default:
			ts = ts.Add(time.Duration(rng.Intn(25000)-20000) * time.Millisecond) // out of order within grace
		}
		level := []string{"error", "info", "ERROR", "warn", "error"}[rng.Intn(5)]
		add(ts, level, services[rng.Intn(len(services))])
	}
	// One record without a level: lower() fails, on_error sends it to
	// the dead-letter topic.
	recs = append(recs, jsonRec(t0.Add(5*time.Minute), map[string]any{"service": "checkout"}))
	// A record an hour later closes every window before it.
	add(t0.Add(time.Hour), "error", "flush")
	e.produce("app_logs", recs...)
	closed := map[wkey]int64{}
	for k, n := range want {
		if k.start+60000+10000 <= st {
			closed[k] = n
		}
	}
	t.Logf("%d records, %d late, %d closed windows", len(recs), late, len(closed))
	if late == 0 || len(closed) < 30 {
		t.Fatalf("test data: %d late records, %d closed windows", late, len(closed))
	}
	read := func() (map[wkey]int64, int, error) {
		got := map[wkey]int64{}
		recs := e.b.ReadAll("error_counts")
		for _, rec := range recs {
			var v struct {
				Service     string    `json:"service"`
				WindowStart time.Time `json:"window_start"`
				WindowEnd   time.Time `json:"window_end"`
				Count       int64     `json:"count"`
			}
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				return nil, 0, fmt.Errorf("result %q: %v", rec.Value, err)
			}
			if string(rec.Key) != v.Service || v.WindowEnd.Sub(v.WindowStart) != time.Minute {
				return nil, 0, fmt.Errorf("result key %q value %s: want the service as key and a 1m window", rec.Key, rec.Value)
			}
			k := wkey{v.Service, v.WindowStart.UnixMilli()}
			if _, dup := got[k]; dup {
				return nil, 0, fmt.Errorf("window %v emitted twice (emit final emits once)", k)
			}
			got[k] = v.Count
		}
		return got, len(recs), nil
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		_, n, err := read()
		if err != nil {
			return err
		}
		if n < len(closed) {
			return fmt.Errorf("%d results so far, want %d", n, len(closed))
		}
		return nil
	})
	got, _, err := read()
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for k, n := range closed {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("%s@%s: got %d want %d", k.svc, time.UnixMilli(k.start).UTC().Format("15:04"), got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := closed[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s@%d: unexpected result %d", k.svc, k.start, n))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%d windows differ from the reference:\n%v", len(diffs), diffs)
	}
	testbroker.CheckFor(t, 10*time.Second, func() error {
		s := statusOf(r, "stream.errors_per_service")
		if int(s.Late) != late || s.RecordsOut != float64(len(closed)) {
			return fmt.Errorf("status %+v: want %d late records, %d results out", s, late, len(closed))
		}
		if dl := e.b.ReadAll(deadletter.Topic("errors_per_service")); len(dl) != 1 {
			return fmt.Errorf("%d dead letters, want 1", len(dl))
		}
		return nil
	})
}

const aggregatePipeline = `
topic "logs" {
  partitions = 2
}
topic "stats" {}

stream "bytes_per_service" {
  from = [topic.logs]
  to   = topic.stats

  group_by = record.service
  aggregate {
    initial = { n = 0, bytes = 0, first = null }
    add = {
      n     = agg.n + 1
      bytes = agg.bytes + length(record.msg)
      first = agg.first == null ? record.msg : agg.first
      last  = "${key}:${record.msg}"
    }
  }
}
`

type svcStats struct {
	Service string `json:"service"`
	N       int64  `json:"n"`
	Bytes   int64  `json:"bytes"`
	First   string `json:"first"`
	Last    string `json:"last"`
}

// latest returns the last result per key (the table's current value).
func latest(t *testing.T, b *testbroker.Broker, topic string) map[string]svcStats {
	t.Helper()
	out := map[string]svcStats{}
	for _, r := range b.ReadAll(topic) {
		var v svcStats
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("result %q: %v", r.Value, err)
		}
		if string(r.Key) != v.Service {
			t.Fatalf("result key %q for %s", r.Key, r.Value)
		}
		out[v.Service] = v
	}
	return out
}

// TestStreamAggregateRestart aggregates with expressions (a count, a sum
// of lengths, the first and last message), stops the runner, and starts
// a new one with an empty state directory: the aggregates are restored
// from the changelog topic and go on from where they were, not from zero.
func TestStreamAggregateRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", aggregatePipeline)
	cfg := e.load()
	want := map[string]svcStats{}
	batch := func(from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			svc := []string{"checkout", "search", "auth", "mail"}[i%4]
			msg := fmt.Sprintf("message %d %s", i, strings.Repeat("x", i%7))
			// Keyed by service, so one service's records stay in order on
			// one input partition (first and last are then well defined).
			rec := jsonRec(time.Now(), map[string]any{"service": svc, "msg": msg})
			rec.Key = []byte(svc)
			recs = append(recs, rec)
			w := want[svc]
			w.Service = svc
			w.N++
			w.Bytes += int64(len(msg))
			if w.First == "" {
				w.First = msg
			}
			w.Last = svc + ":" + msg
			want[svc] = w
		}
		return recs
	}
	check := func() error {
		got := latest(t, e.b, "stats")
		for svc, w := range want {
			if got[svc] != w {
				return fmt.Errorf("%s: got %+v want %+v", svc, got[svc], w)
			}
		}
		return nil
	}

	r1 := e.streamRunner(t.TempDir())
	if _, err := r1.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	e.produce("logs", batch(0, 400)...)
	testbroker.CheckFor(t, 60*time.Second, check)
	r1.Stop()
	if n := len(e.b.ReadAll("weir-stream-bytes_per_service-aggregate-changelog")); n == 0 {
		t.Fatal("no changelog records")
	}
	if n := len(e.b.ReadAll("weir-stream-bytes_per_service-aggregate-repartition")); n != 400 {
		t.Fatalf("repartition topic has %d records, want 400 (group_by changes the key)", n)
	}

	r2 := e.streamRunner(t.TempDir()) // empty stores: restore from the changelog
	if _, err := r2.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	e.produce("logs", batch(400, 700)...)
	testbroker.CheckFor(t, 60*time.Second, check)
	if s := statusOf(r2, "stream.bytes_per_service"); s.RecordsIn < 300 || s.Errors != 0 {
		t.Fatalf("status after restart %+v", s)
	}
}

const selectKeyPipeline = `
topic "logs" {}
topic "by_user" {
  partitions = 3
}

stream "by_user" {
  from = [topic.logs]
  to   = topic.by_user

  set {
    user = lower(record.user)
  }
  select_key = record.user
}
`

// TestStreamSelectKey re-keys records by a field: every output record's
// key is its user, records of one user share a partition, and values
// keep their fields.
func TestStreamSelectKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", selectKeyPipeline)
	r := e.streamRunner(t.TempDir())
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 300 {
		rec := jsonRec(time.Now(), map[string]any{"user": []string{"Alice", "BOB", "carol", "Dave", "eve"}[i%5], "n": i})
		rec.Key = []byte(fmt.Sprint(i))
		recs = append(recs, rec)
	}
	e.produce("logs", recs...)
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n := len(e.b.ReadAll("by_user")); n != 300 {
			return fmt.Errorf("%d records re-keyed, want 300", n)
		}
		return nil
	})
	part := map[string]int32{}
	seen := map[float64]bool{}
	for _, rec := range e.b.ReadAll("by_user") {
		var v struct {
			User string  `json:"user"`
			N    float64 `json:"n"`
		}
		if err := json.Unmarshal(rec.Value, &v); err != nil {
			t.Fatal(err)
		}
		if string(rec.Key) != v.User || v.User == "" {
			t.Fatalf("key %q for value %s", rec.Key, rec.Value)
		}
		if p, ok := part[v.User]; ok && p != rec.Partition {
			t.Fatalf("user %s in partitions %d and %d", v.User, p, rec.Partition)
		}
		part[v.User] = rec.Partition
		seen[v.N] = true
	}
	if len(part) != 5 || len(seen) != 300 {
		t.Fatalf("%d users, %d distinct records", len(part), len(seen))
	}
}

// TestSinkInstanceID: a sink's instance_id reaches its consumer group as
// the member's group.instance.id (static membership), and changing it
// changes the sink's hash (a reload restarts the sink).
func TestSinkInstanceID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const p = `
topic "t" {}
sink "file" "f" {
  from = [topic.t]
  path = "${path.root}/out.jsonl"
  %s
}
`
	e.write("p.hcl", fmt.Sprintf(p, ""))
	plain := e.load().Sinks[0]
	e.write("p.hcl", fmt.Sprintf(p, `instance_id = "weir-f-1"`))
	cfg := e.load()
	if s := cfg.Sinks[0]; s.InstanceID != "weir-f-1" || s.Hash == plain.Hash || plain.InstanceID != "" {
		t.Fatalf("instance_id %q (plain %q), hash %s vs %s", s.InstanceID, plain.InstanceID, s.Hash, plain.Hash)
	}
	r := e.runner()
	if _, err := r.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cl := e.b.Client()
	defer cl.Close()
	adm := kadm.NewClient(cl)
	testbroker.CheckFor(t, 30*time.Second, func() error {
		gs, err := adm.DescribeGroups(context.Background(), "weir-sink-f")
		if err != nil {
			return err
		}
		g := gs["weir-sink-f"]
		if len(g.Members) != 1 {
			return fmt.Errorf("group %+v: want one member", g)
		}
		if id := g.Members[0].InstanceID; id == nil || *id != "weir-f-1" {
			return fmt.Errorf("member instance id %v, want weir-f-1", id)
		}
		return nil
	})
}

const twoStreams = `
topic "logs" {}
topic "a" {}
topic "b" {}

stream "per_service" {
  from     = [topic.logs]
  to       = topic.a
  group_by = record.service
  count {}
}

stream "per_user" {
  from     = [topic.logs]
  to       = topic.b
  group_by = record.user
  %s
  count {}
}
`

// TestStreamsMetricsAndReload: two aggregating streams report their
// task metrics into one registry (labelled by stream), and a reload that
// changes one of them restarts only that one, which registers its
// metrics again and keeps its counts.
func TestStreamsMetricsAndReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.write("p.hcl", fmt.Sprintf(twoStreams, ""))
	reg := prometheus.NewRegistry()
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, SchemaRegistry: e.reg,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), RestartBackoff: 200 * time.Millisecond,
		StateDir: t.TempDir(), StreamsCommitInterval: 200 * time.Millisecond, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, jsonRec(time.Now(), map[string]any{"service": fmt.Sprint("s", i%2), "user": fmt.Sprint("u", i%5)}))
	}
	e.produce("logs", recs...)
	processed := func() map[string]float64 {
		out := map[string]float64{}
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != "weir_streams_records_processed_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "stream" {
						out[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
		return out
	}
	// Each stream processes 100 input records and 100 repartitioned ones.
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if m := processed(); m["per_service"] != 200 || m["per_user"] != 200 {
			return fmt.Errorf("processed %v", m)
		}
		return nil
	})
	if err := os.WriteFile(p, []byte(fmt.Sprintf(twoStreams, `filter {
    condition = record.user != "u0"
  }`)), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := r.Apply(context.Background(), e.load())
	if err != nil || fmt.Sprint(changed) != "[stream.per_user]" {
		t.Fatalf("reload restarted %v (%v), want only stream.per_user", changed, err)
	}
	e.produce("logs", recs...)
	testbroker.CheckFor(t, 30*time.Second, func() error {
		counts := map[string]float64{}
		for _, rec := range e.b.ReadAll("b") {
			var v struct {
				User  string  `json:"user"`
				Count float64 `json:"count"`
			}
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				return err
			}
			counts[v.User] = v.Count
		}
		want := map[string]float64{"u0": 20, "u1": 40, "u2": 40, "u3": 40, "u4": 40}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			return fmt.Errorf("counts per user %v, want %v", counts, want)
		}
		if m := processed(); m["per_user"] < 1 {
			return fmt.Errorf("the restarted stream reports no metrics: %v", m)
		}
		return nil
	})
	for _, s := range r.Status() {
		if s.State != "running" || s.LastErr != nil {
			t.Errorf("%s: %s, %v", s.ID, s.State, s.LastErr)
		}
	}
}

const avroCounts = `
topic "logs" {}
topic "counts" {
  schema = <<-EOT
    {"type": "record", "name": "Count", "fields": [
      {"name": "service", "type": "string"},
      {"name": "window_start", "type": {"type": "long", "logicalType": "timestamp-millis"}},
      {"name": "window_end", "type": {"type": "long", "logicalType": "timestamp-millis"}},
      {"name": "count", "type": "long"}
    ]}
  EOT
}

stream "per_minute" {
  from     = [topic.logs]
  to       = topic.counts
  group_by = record.service
  window "tumbling" {
    size = "1m"
    emit = "final"
  }
  count {}
}

sink "file" "out" {
  from = [topic.counts]
  path = "${path.root}/out/counts.jsonl"
}
`

// TestStreamAvroResults: results written to a topic with an Avro schema
// are Avro (registered schema, Confluent framing) and read back as the
// same fields.
func TestStreamAvroResults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", avroCounts)
	r := e.streamRunner(t.TempDir())
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	e.produce("logs",
		jsonRec(t0.Add(5*time.Second), map[string]any{"service": "a"}),
		jsonRec(t0.Add(65*time.Second), map[string]any{"service": "a"}),
		jsonRec(t0.Add(10*time.Second), map[string]any{"service": "b"}), // late: grace is 0
		jsonRec(t0.Add(62*time.Second), map[string]any{"service": "b"}),
		jsonRec(t0.Add(time.Hour), map[string]any{"service": "flush"}))
	out := filepath.Join(e.dir, "out/counts.jsonl")
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n := len(readLines(t, out)); n != 3 {
			return fmt.Errorf("%d results, want 3", n)
		}
		return nil
	})
	var got []string
	for _, m := range readLines(t, out) {
		got = append(got, fmt.Sprint(m["service"], " ", m["window_start"], " ", m["window_end"], " ", m["count"]))
	}
	sort.Strings(got)
	want := []string{"a 2024-05-01T10:00:00Z 2024-05-01T10:01:00Z 1", "a 2024-05-01T10:01:00Z 2024-05-01T10:02:00Z 1",
		"b 2024-05-01T10:01:00Z 2024-05-01T10:02:00Z 1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("results\n%q\nwant\n%q", got, want)
	}
	for _, rec := range e.b.ReadAll("counts") {
		if len(rec.Value) < 5 || rec.Value[0] != 0 {
			t.Fatalf("result not Avro-framed: %x", rec.Value)
		}
	}
	if s := statusOf(r, "stream.per_minute"); s.Late != 1 {
		t.Fatalf("status %+v: want 1 late record", s)
	}
}

const eventTimeCount = `
topic "clicks" {}
topic "click_counts" {}

stream "clicks_per_page" {
  from = [topic.clicks]
  to   = topic.click_counts

  parse_timestamp {
    field  = "at"
    layout = "rfc3339"
  }
  group_by = record.page
  window "tumbling" {
    size  = "1m"
    grace = "10s"
    emit  = "final"
  }
  count {}
}
`

// TestStreamWindowedEventTime: parse_timestamp in a windowed stream sets
// the event time the windows use. The records' Kafka timestamps run
// backwards from a day later, so counting by them would give nothing like
// the reference, which is computed here from the parsed times (out of
// order within the grace period, some late); records without a parsable
// time go to the dead-letter topic.
func TestStreamWindowedEventTime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", eventTimeCount)
	r := e.streamRunner(t.TempDir())
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	kafkaT := t0.Add(24 * time.Hour)
	rng := rand.New(rand.NewSource(11))
	pages := []string{"/", "/cart", "/search"}
	type wkey struct {
		page  string
		start int64
	}
	want := map[wkey]int64{}
	var st int64
	late := 0
	var recs []*kgo.Record
	for i := range 1200 {
		ts := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		if i%40 == 9 {
			ts = ts.Add(-3 * time.Minute) // late
		} else {
			ts = ts.Add(time.Duration(rng.Intn(20000)-15000) * time.Millisecond)
		}
		page := pages[rng.Intn(len(pages))]
		recs = append(recs, jsonRec(kafkaT.Add(-time.Duration(i)*time.Second), map[string]any{"page": page, "at": ts.Format(time.RFC3339Nano)}))
		ms := ts.UnixMilli()
		st = max(st, ms)
		start := ms / 60000 * 60000
		if start+70000 <= st {
			late++
			continue
		}
		want[wkey{page, start}]++
	}
	// No time, and a time that does not parse: dead letters.
	recs = append(recs, jsonRec(kafkaT, map[string]any{"page": "/"}), jsonRec(kafkaT, map[string]any{"page": "/", "at": "yesterday"}))
	end := t0.Add(time.Hour)
	recs = append(recs, jsonRec(kafkaT, map[string]any{"page": "flush", "at": end.Format(time.RFC3339)}))
	st = end.UnixMilli()
	e.produce("clicks", recs...)
	closed := map[wkey]int64{}
	for k, n := range want {
		if k.start+70000 <= st {
			closed[k] = n
		}
	}
	if late == 0 || len(closed) < 20 {
		t.Fatalf("test data: %d late records, %d closed windows", late, len(closed))
	}
	read := func() (map[wkey]int64, error) {
		got := map[wkey]int64{}
		for _, rec := range e.b.ReadAll("click_counts") {
			var v struct {
				Page        string    `json:"page"`
				WindowStart time.Time `json:"window_start"`
				Count       int64     `json:"count"`
			}
			if err := json.Unmarshal(rec.Value, &v); err != nil {
				return nil, fmt.Errorf("result %q: %v", rec.Value, err)
			}
			k := wkey{v.Page, v.WindowStart.UnixMilli()}
			if _, dup := got[k]; dup {
				return nil, fmt.Errorf("window %v emitted twice", k)
			}
			got[k] = v.Count
		}
		return got, nil
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		got, err := read()
		if err != nil {
			return err
		}
		if len(got) < len(closed) {
			return fmt.Errorf("%d results so far, want %d", len(got), len(closed))
		}
		return nil
	})
	got, err := read()
	if err != nil {
		t.Fatal(err)
	}
	var diffs []string
	for k, n := range closed {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("%s@%s: got %d want %d", k.page, time.UnixMilli(k.start).UTC().Format("15:04"), got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := closed[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s@%d: unexpected result %d", k.page, k.start, n))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%d windows differ from the reference:\n%v", len(diffs), diffs)
	}
	testbroker.CheckFor(t, 10*time.Second, func() error {
		s := statusOf(r, "stream.clicks_per_page")
		if int(s.Late) != late {
			return fmt.Errorf("status %+v: want %d late records", s, late)
		}
		dl := e.b.ReadAll(deadletter.Topic("clicks_per_page"))
		if len(dl) != 2 {
			return fmt.Errorf("%d dead letters, want 2", len(dl))
		}
		for _, d := range dl {
			if !strings.Contains(headerOf(d, deadletter.HeaderMessage), "no event time") {
				return fmt.Errorf("dead letter %s: error %q", d.Value, headerOf(d, deadletter.HeaderMessage))
			}
		}
		return nil
	})
	t.Logf("%d records, %d late, %d closed windows match the reference", len(recs), late, len(closed))
}

func headerOf(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
