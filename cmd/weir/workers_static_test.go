package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/txntest"
	"weir/internal/weirbin"
)

// partsPipeline is a pipeline that only shares partitions: an input
// topic of 4 partitions read by a file sink and by an aggregating stream
// (a count per key, through a repartition topic).
const partsPipeline = `
variable "brokers" { type = string }
variable "prefix" { type = string }

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
  path   = "out.jsonl" # in each worker's own folder
  format = "envelope"
}
`

// groupWorkers is a worker group of `weir run` processes over one
// broker, each in its own folder (its stream state) with its own log
// (dir/<id>.weir.log, appended across restarts); a file sink's relative
// path is in that folder, so the pipeline files stay the same on every
// worker.
type groupWorkers struct {
	t                             testing.TB
	bin, dir, addr, prefix, group string
	file                          string   // the pipeline file of start
	args                          []string // more `weir run` arguments
	procs                         map[string]*testkit.Proc
}

func newGroupWorkers(t testing.TB, bin, addr, pipeline string, args ...string) *groupWorkers {
	g := &groupWorkers{t: t, bin: bin, dir: t.TempDir(), addr: addr, args: args, procs: map[string]*testkit.Proc{}}
	g.prefix = fmt.Sprintf("gw%d", time.Now().UnixNano()%1e9)
	g.group = g.prefix + "-workers"
	g.file = g.writeFile("pipeline.hcl", pipeline)
	return g
}

func (g *groupWorkers) writeFile(name, content string) string {
	p := filepath.Join(g.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		g.t.Fatal(err)
	}
	return p
}

func (g *groupWorkers) logPath(id string) string { return filepath.Join(g.dir, id+".weir.log") }

// start starts worker id with pipeline file (g.file if ""), prefixed by
// pre (e.g. taskset -c 0), and waits until its pipelines run.
func (g *groupWorkers) start(id, file string, pre ...string) *testkit.Proc {
	t := g.t
	if file == "" {
		file = g.file
	}
	wd := filepath.Join(g.dir, id) // its own .weir (stream state)
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := append(slices.Clone(pre), g.bin, "run", file, "--status", "off", "--summary-interval", "0", "--admin-addr", "off",
		"--group", g.group, "--worker-id", id,
		"--var", "brokers="+g.addr, "--var", "prefix="+g.prefix)
	cmd = append(cmd, g.args...)
	// sh changes to the worker's folder and execs: the pid is weir's.
	p, err := testkit.StartProc("/bin/sh", append([]string{"-c", `cd "$0" && exec "$@"`, wd}, cmd...), g.logPath(id), "pipelines running")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() || os.Getenv("WEIR_TEST_WORKER_LOGS") != "" {
			b, _ := os.ReadFile(g.logPath(id))
			t.Logf("%s log:\n%s", id, testkit.LastLines(string(b), 150))
		}
	})
	if err := p.WaitReady(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	g.procs[id] = p
	return p
}

// produce writes values (JSON objects {"k": v}) to topic, value i to
// partition i%partitions.
func (g *groupWorkers) produce(topic string, partitions int32, vals []string) {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{g.addr}}, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		g.t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, len(vals))
	for i, v := range vals {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: []byte(`{"k":"` + v + `"}`)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		g.t.Fatal(err)
	}
}

// logged returns the JSON log lines of worker id (every run of it) whose
// message starts with msg.
func (g *groupWorkers) logged(id, msg string) []map[string]any {
	b, _ := os.ReadFile(g.logPath(id))
	var out []map[string]any
	for _, l := range strings.Split(string(b), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			if s, _ := m["msg"].(string); strings.HasPrefix(s, msg) {
				out = append(out, m)
			}
		}
	}
	return out
}

// outputs returns every worker's sink output, concatenated.
func (g *groupWorkers) outputs() string {
	files, _ := filepath.Glob(filepath.Join(g.dir, "*", "out.jsonl"))
	var all strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	return all.String()
}

// probeKeys writes one record per partition of the input topic (4) with
// fresh keys and returns them.
func (g *groupWorkers) probeKeys(tag string) []string {
	var keys []string
	for p := 0; p < 4; p++ {
		keys = append(keys, fmt.Sprintf("probe-%s-%d-%d", tag, p, time.Now().UnixNano()))
	}
	g.produce(g.prefix+".in", 4, keys)
	return keys
}

// waitSunk waits until every key is in a worker's sink output.
func (g *groupWorkers) waitSunk(keys []string, timeout time.Duration) {
	testkit.CheckFor(g.t, timeout, func() error {
		all := g.outputs()
		for _, k := range keys {
			if !strings.Contains(all, k) {
				return fmt.Errorf("%s not written by any sink yet", k)
			}
		}
		return nil
	})
}

// waitCounted waits until the stream has written a count for every key.
func (g *groupWorkers) waitCounted(keys []string, timeout time.Duration) {
	testkit.CheckFor(g.t, timeout, func() error {
		recs, err := txntest.ReadCommittedErr(g.addr, g.prefix+".counts")
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, r := range recs {
			seen[string(r.Key)] = true
		}
		for _, k := range keys {
			if !seen[k] {
				return fmt.Errorf("no count of %s in %s yet (%d records)", k, g.prefix+".counts", len(recs))
			}
		}
		return nil
	})
}

// assignments returns, per consumer group, every member's
// group.instance.id with its partitions ("topic/p", sorted).
func (g *groupWorkers) assignments(groups ...string) map[string]map[string][]string {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{g.addr}})
	if err != nil {
		g.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds, err := kadm.NewClient(cl).DescribeGroups(ctx, groups...)
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[string]map[string][]string{}
	for _, d := range ds.Sorted() {
		m := map[string][]string{}
		for _, mb := range d.Members {
			inst := "<dynamic " + mb.MemberID + ">"
			if mb.InstanceID != nil {
				inst = *mb.InstanceID
			}
			var ps []string
			if ca, ok := mb.Assigned.AsConsumer(); ok {
				for _, tp := range ca.Topics {
					for _, p := range tp.Partitions {
						ps = append(ps, fmt.Sprintf("%s/%d", tp.Topic, p))
					}
				}
			}
			sort.Strings(ps)
			m[inst] = ps
		}
		out[d.Group] = m
	}
	return out
}

// TestWorkerGroupStaticRestart: the sinks and aggregating streams of a
// worker group are static members of their consumer groups with instance
// ids derived from the worker and the component (weir-<worker>-<id>), so
// a worker killed with -9 and restarted at once gets its partitions back
// (the same ones) and processes them again long before its old session
// (40 s here) would have expired; the other worker keeps its own
// partitions throughout. Against Apache Kafka 4.4 and a weir broker.
func TestWorkerGroupStaticRestart(t *testing.T) {
	bin := weirbin.Build(t)
	const session = 40 * time.Second
	for _, tg := range txntest.Brokers(t) {
		t.Run(tg.Name, func(t *testing.T) {
			g := newGroupWorkers(t, bin, tg.Addr, partsPipeline, "--session-timeout", session.String())
			g.start("w1", "")
			g.start("w2", "")
			keys := g.probeKeys("before")
			g.waitSunk(keys, 60*time.Second)
			g.waitCounted(keys, 60*time.Second)
			groups := []string{g.prefix + "-out", g.prefix + "-count"}
			instances := map[string]string{groups[0]: "sink.out", groups[1]: "stream.count"}
			var before map[string]map[string][]string
			testkit.CheckFor(t, 30*time.Second, func() error {
				before = g.assignments(groups...)
				for _, grp := range groups {
					for _, w := range []string{"w1", "w2"} {
						inst := "weir-" + w + "-" + instances[grp]
						if len(before[grp][inst]) == 0 {
							return fmt.Errorf("group %s: no partitions for static member %s yet: %v", grp, inst, before[grp])
						}
					}
					if len(before[grp]) != 2 {
						return fmt.Errorf("group %s has members %v, want the two workers' static members", grp, before[grp])
					}
				}
				return nil
			})
			t.Logf("%s: assignments before the kill: %v", tg.Name, before)

			t0 := time.Now()
			g.procs["w1"].Kill()
			g.start("w1", "")
			restarted := time.Since(t0)
			keys = g.probeKeys("after")
			g.waitSunk(keys, session)
			sunk := time.Since(t0)
			g.waitCounted(keys, session)
			counted := time.Since(t0)
			t.Logf("%s: after kill -9 of w1 (restarted within %v) every partition was sunk again within %v and counted within %v (session timeout %v)",
				tg.Name, restarted.Round(10*time.Millisecond), sunk.Round(10*time.Millisecond), counted.Round(10*time.Millisecond), session)
			// Without static members the restarted worker is a new member:
			// the rebalance waits for the dead one's session to expire.
			if limit := session / 2; sunk > limit || counted > limit {
				t.Errorf("partitions processed again %v (sink) / %v (stream) after the kill -9, want well within the %v session timeout (at most %v)", sunk, counted, session, limit)
			}
			for _, w := range []string{"w1", "w2"} {
				if l := g.logged(w, "worker group: workers loaded different pipeline files"); len(l) > 0 {
					t.Errorf("%s reports different pipeline files (all load the same): %v", w, l[0])
				}
			}
			after := g.assignments(groups...)
			for _, grp := range groups {
				if fmt.Sprint(after[grp]) != fmt.Sprint(before[grp]) {
					t.Errorf("group %s after the restart: %v, want the same partitions per member as before: %v", grp, after[grp], before[grp])
				}
			}
		})
	}
}
