package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/txntest"
	"weir/internal/weirbin"
)

// reloadPipeline is the pipeline of TestWorkerGroupReload: a per-worker
// file source, an aggregating stream and two file sinks; FSYNC is the
// setting the test edits.
const reloadPipeline = `
variable "brokers" { type = string }
variable "prefix" { type = string }
variable "log_file" { type = string }

broker {
  brokers = [var.brokers]
}

topic "in" {
  name       = "${var.prefix}.in"
  partitions = 4
}

topic "counts" {
  name       = "${var.prefix}.counts"
  partitions = 4
}

topic "lines" {
  name       = "${var.prefix}.lines"
  partitions = 2
}

source "file" "logs" {
  topic    = topic.lines
  include  = [var.log_file]
  encoding = "json"
}

stream "count" {
  group    = "${var.prefix}-count"
  from     = [topic.in]
  to       = topic.counts
  group_by = record.k
  count {
    field = "n"
  }
}

sink "file-sink" "out" {
  group  = "${var.prefix}-out"
  from   = [topic.in]
  path   = "out.jsonl"
  format = "envelope"
  fsync  = FSYNC
}

sink "file-sink" "archive" {
  group  = "${var.prefix}-archive"
  from   = [topic.lines]
  path   = "archive.jsonl"
  format = "envelope"
}
`

// TestWorkerGroupReload: editing a sink's setting in the pipeline file of
// every worker of a group (one after the other, as a rollout would)
// restarts only that sink, on each worker once; the other components
// (a per-worker file source, an aggregating stream, another sink) run on
// untouched; while the two workers' files differ the group settles
// instead of rebalancing over and over; and no record is lost or
// written twice: every input record is in the edited sink's output
// exactly once, every log line in the other sink's, and the stream's
// counts are exact. Records are produced throughout. Then a sink
// removed from one worker's file leaves its consumer group at once.
func TestWorkerGroupReload(t *testing.T) {
	bin := weirbin.Build(t)
	for _, tg := range txntest.Brokers(t) {
		t.Run(tg.Name, func(t *testing.T) {
			g := newGroupWorkers(t, bin, tg.Addr, "", "--watch-interval", "200ms")
			files := map[string]string{}
			write := func(id, fsync string) {
				// Written aside and renamed, as editors save.
				tmp := g.writeFile(id+".hcl.tmp", strings.Replace(reloadPipeline, "FSYNC", fsync, 1))
				files[id] = filepath.Join(g.dir, id+".hcl")
				if err := os.Rename(tmp, files[id]); err != nil {
					t.Fatal(err)
				}
			}
			ids := []string{"w1", "w2"}
			for _, id := range ids {
				write(id, "true")
				os.WriteFile(filepath.Join(g.dir, id+".app.log"), nil, 0o644)
				g.args = []string{"--watch-interval", "200ms", "--session-timeout", "30s", "--var", "log_file=" + filepath.Join(g.dir, id+".app.log")}
				g.start(id, files[id])
			}

			// Input all along: records to the topic, lines to each
			// worker's log file.
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var produced, lines int
			wg.Add(1)
			go func() {
				defer wg.Done()
				produced, lines = g.feed(ctx, ids)
			}()
			defer func() { stop(); wg.Wait() }()
			waitSeq := func(n int) {
				testkit.CheckFor(t, 60*time.Second, func() error {
					if got := len(g.sinkRecords("out.jsonl")); got < n {
						return fmt.Errorf("%d records in the sinks' output, want %d", got, n)
					}
					return nil
				})
			}
			waitSeq(100)
			// The group has formed with both workers before the rollout
			// begins (on a loaded machine the second worker can join
			// after the first records are through): the assignments
			// counted below are the rollout's own.
			testkit.CheckFor(t, 60*time.Second, func() error {
				for _, id := range ids {
					l := g.logged(id, "worker group: assignment")
					if len(l) == 0 || l[len(l)-1]["workers"] != float64(len(ids)) {
						return fmt.Errorf("%s: %d assignments so far, the last %v; want one with %d workers", id, len(l), l[max(0, len(l)-1):], len(ids))
					}
				}
				return nil
			})

			// The rollout: w1 first; the group runs with different files
			// for a while; then w2.
			reloaded := func(id string, n int) []string {
				var l []map[string]any
				testkit.CheckFor(t, 30*time.Second, func() error {
					l = g.logged(id, "pipelines reloaded")
					if len(l) < n {
						return fmt.Errorf("%s has reloaded %d times, want %d", id, len(l), n)
					}
					return nil
				})
				var restarted []string
				for _, x := range l[n-1]["restarted"].([]any) {
					restarted = append(restarted, x.(string))
				}
				return restarted
			}
			assignments := func() int {
				n := 0
				for _, id := range ids {
					n += len(g.logged(id, "worker group: assignment"))
				}
				return n
			}
			write("w1", "false")
			if r := reloaded("w1", 1); !slices.Equal(r, []string{"sink.out"}) {
				t.Errorf("w1's reload restarted %v, want [sink.out]", r)
			}
			mixedFrom := assignments()
			// Records flow while the files differ (~3 s at 200/s), and
			// the group settles: one rebalance for w1's new hash (one
			// assignment per worker), not one after another.
			mixedAt := time.Now()
			n := len(g.sinkRecords("out.jsonl"))
			waitSeq(n + 600)
			if mixed := assignments() - mixedFrom; mixed > 4 {
				t.Errorf("the worker group had %d assignments in the %v its workers' files differed: it thrashes", mixed, time.Since(mixedAt).Round(time.Millisecond))
			}
			write("w2", "false")
			if r := reloaded("w2", 1); !slices.Equal(r, []string{"sink.out"}) {
				t.Errorf("w2's reload restarted %v, want [sink.out]", r)
			}
			n = len(g.sinkRecords("out.jsonl"))
			waitSeq(n + 200)
			stop()
			wg.Wait()
			t.Logf("%s: %d records produced, %d log lines written", tg.Name, produced, lines)

			// Every record once, every line once.
			g.checkOnce(t, "out.jsonl", g.prefix+".in", produced)
			g.checkOnce(t, "archive.jsonl", g.prefix+".lines", lines)
			g.checkCounts(t, produced)
			// Only sink.out restarted, once per worker; nothing else did.
			for _, id := range ids {
				starts := map[string]int{}
				for _, l := range g.logged(id, "pipeline component starting") {
					starts[l["component"].(string)]++
				}
				want := map[string]int{"source.logs": 1, "stream.count": 1, "sink.archive": 1, "sink.out": 2}
				if fmt.Sprint(starts) != fmt.Sprint(want) {
					t.Errorf("%s started components %v, want %v", id, starts, want)
				}
				if l := g.logged(id, "reload failed"); len(l) > 0 {
					t.Errorf("%s: %v", id, l)
				}
			}
			// The files agree again: nothing reports a difference since.
			mm := 0
			for _, id := range ids {
				mm += len(g.logged(id, "worker group: workers loaded different pipeline files"))
			}
			t.Logf("%s: %d assignments in all, %d reported different files (while the rollout ran)", tg.Name, assignments(), mm)

			// A sink removed from w1's file leaves its consumer group: w2's
			// member takes every partition at once, not after w1's member's
			// session (30 s) expires.
			tmp := g.writeFile("w1.hcl.tmp", strings.Replace(reloadPipeline[:strings.Index(reloadPipeline, `sink "file-sink" "archive"`)], "FSYNC", "false", 1))
			if err := os.Rename(tmp, files["w1"]); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			if r := reloaded("w1", 2); !slices.Equal(r, []string{"sink.archive"}) {
				t.Errorf("w1's second reload stopped %v, want [sink.archive]", r)
			}
			grp := g.prefix + "-archive"
			testkit.CheckFor(t, 30*time.Second, func() error {
				a := g.assignments(grp)[grp]
				if len(a) != 1 || len(a["weir-w2-sink.archive"]) != 2 {
					return fmt.Errorf("group %s: %v, want w2's member alone with both partitions", grp, a)
				}
				return nil
			})
			took := time.Since(t0)
			t.Logf("%s: sink.archive removed from w1's file: w2's member had every partition %v later", tg.Name, took.Round(10*time.Millisecond))
			if took > 10*time.Second {
				t.Errorf("w2's sink.archive took %v to get w1's partitions, want well within the 30s session timeout (the removed member leaves)", took)
			}
		})
	}
}

// feed produces records {"k": "key-<i%10>", "seq": i} to the input topic
// and appends a line to each worker's log file until ctx ends, at about
// 200 records/s; it returns how many of each it wrote.
func (g *groupWorkers) feed(ctx context.Context, ids []string) (records, lines int) {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{g.addr}})
	if err != nil {
		g.t.Error(err)
		return 0, 0
	}
	defer cl.Close()
	tk := time.NewTicker(50 * time.Millisecond)
	defer tk.Stop()
	for ctx.Err() == nil {
		var recs []*kgo.Record
		for j := 0; j < 10; j++ {
			recs = append(recs, &kgo.Record{Topic: g.prefix + ".in", Key: []byte(fmt.Sprintf("key-%d", records%10)),
				Value: []byte(fmt.Sprintf(`{"k":"key-%d","seq":%d}`, records%10, records))})
			records++
		}
		pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.ProduceSync(pctx, recs...).FirstErr()
		cancel()
		if err != nil {
			g.t.Errorf("producing: %v", err)
			return records, lines
		}
		for _, id := range ids {
			f, err := os.OpenFile(filepath.Join(g.dir, id+".app.log"), os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				_, err = fmt.Fprintf(f, "{\"line\":%d,\"worker\":%q}\n", lines, id)
				f.Close()
			}
			if err != nil {
				g.t.Errorf("appending to %s's log: %v", id, err)
				return records, lines * len(ids)
			}
		}
		lines++
		select {
		case <-ctx.Done():
		case <-tk.C:
		}
	}
	return records, lines * len(ids)
}

// envelope is a file sink's envelope line.
type envelope struct {
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value"`
}

// sinkRecords returns the envelopes of every worker's sink output file
// name.
func (g *groupWorkers) sinkRecords(name string) []envelope {
	files, _ := filepath.Glob(filepath.Join(g.dir, "*", name))
	var out []envelope
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			var e envelope
			if json.Unmarshal([]byte(l), &e) == nil {
				out = append(out, e)
			}
		}
	}
	return out
}

// checkOnce waits until the sinks' output file name holds n records of
// topic and checks that each offset is there exactly once.
func (g *groupWorkers) checkOnce(t *testing.T, name, topic string, n int) {
	var recs []envelope
	testkit.CheckFor(t, 60*time.Second, func() error {
		recs = g.sinkRecords(name)
		if len(recs) < n {
			return fmt.Errorf("%d records in the sinks' %s, want %d", len(recs), name, n)
		}
		return nil
	})
	seen := map[string]int{}
	for _, e := range recs {
		if e.Topic != topic {
			t.Errorf("%s: a record of topic %s", name, e.Topic)
		}
		seen[fmt.Sprintf("%d/%d", e.Partition, e.Offset)]++
	}
	dup := 0
	for k, c := range seen {
		if c > 1 {
			dup++
			if dup <= 5 {
				t.Errorf("%s: record %s/%s written %d times", name, topic, k, c)
			}
		}
	}
	if len(seen) != n || dup > 0 {
		t.Errorf("%s: %d distinct records (%d duplicated), want %d, each once", name, len(seen), dup, n)
	}
}

// checkCounts waits until the stream's last count of every key is the
// number of records produced with it (n records, keys key-<i%10>).
func (g *groupWorkers) checkCounts(t *testing.T, n int) {
	want := map[string]float64{}
	for i := 0; i < n; i++ {
		want[fmt.Sprintf("key-%d", i%10)]++
	}
	testkit.CheckFor(t, 60*time.Second, func() error {
		recs, err := txntest.ReadCommittedErr(g.addr, g.prefix+".counts")
		if err != nil {
			return err
		}
		last := map[string]float64{}
		for _, r := range recs {
			var v struct{ N float64 }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return fmt.Errorf("count record %q: %v", r.Value, err)
			}
			last[string(r.Key)] = v.N // in offset order per key's partition
		}
		if fmt.Sprint(last) != fmt.Sprint(want) {
			return fmt.Errorf("counts %v, want %v", last, want)
		}
		return nil
	})
}
