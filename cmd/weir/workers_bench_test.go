package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/brokertest/testbroker"
	"weir/ingest/bench"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/weirbin"
	"weir/schemas"
)

// benchSinkSchema is the Avro record of BenchmarkWorkerGroupSinkThroughput:
// an access-log event of 20 fields with a nested array and a map, so
// that a sink's per-record work (Avro to native to JSON) is large next
// to the bytes the broker serves for it.
const benchSinkSchema = `{"type":"record","name":"Access","namespace":"weir.bench","fields":[
 {"name":"timestamp","type":"long"},{"name":"host","type":"string"},{"name":"service","type":"string"},
 {"name":"level","type":{"type":"enum","name":"Level","symbols":["DEBUG","INFO","WARN","ERROR"]}},
 {"name":"method","type":"string"},{"name":"path","type":"string"},{"name":"status","type":"int"},
 {"name":"latency_ms","type":"double"},{"name":"bytes_in","type":"long"},{"name":"bytes_out","type":"long"},
 {"name":"user","type":["null","string"],"default":null},{"name":"session","type":"string"},
 {"name":"region","type":"string"},{"name":"zone","type":"string"},{"name":"ok","type":"boolean"},
 {"name":"retries","type":"int"},{"name":"trace_id","type":"string"},
 {"name":"tags","type":{"type":"map","values":"string"}},
 {"name":"spans","type":{"type":"array","items":{"type":"record","name":"Span","fields":[
   {"name":"name","type":"string"},{"name":"start_us","type":"long"},{"name":"dur_us","type":"long"},{"name":"ok","type":"boolean"}]}}},
 {"name":"message","type":"string"}]}`

func benchSinkEvent(i int) map[string]any {
	spans := make([]any, 0, 5)
	for j := 0; j < 5; j++ {
		spans = append(spans, map[string]any{"name": fmt.Sprintf("db.query.%d", j), "start_us": int64(i*10 + j), "dur_us": int64(100 + j*37), "ok": j != 3})
	}
	return map[string]any{
		"timestamp": int64(1718000000000 + i), "host": fmt.Sprintf("web-%d.example.internal", i%40), "service": "checkout",
		"level": []string{"DEBUG", "INFO", "WARN", "ERROR"}[i%4], "method": "GET", "path": fmt.Sprintf("/api/cart/%d/items", i%1000),
		"status": int32(200 + i%3), "latency_ms": float64(i%700) + 0.25, "bytes_in": int64(i % 512), "bytes_out": int64(5000 + i%4096),
		"user": map[string]any{"string": fmt.Sprintf("user-%d", i%997)}, "session": fmt.Sprintf("s-%08x", i*2654435761),
		"region": "eu-west-1", "zone": "eu-west-1b", "ok": i%17 != 0, "retries": int32(i % 3), "trace_id": fmt.Sprintf("%016x%016x", i, i*31),
		"tags":  map[string]any{"env": "prod", "team": "payments", "build": "v1.42.7", "canary": "false", "pod": fmt.Sprintf("checkout-%d", i%12)},
		"spans": spans, "message": fmt.Sprintf("GET /api/cart/%d/items served in %dms", i%1000, i%700),
	}
}

// benchSinkPipeline: a file sink decoding the Avro records to JSON lines
// (written to /dev/null: the disk is shared and not what is measured).
const benchSinkPipeline = `
variable "brokers" { type = string }
variable "prefix" { type = string }
variable "registry" { type = string }

broker {
  brokers         = [var.brokers]
  schema_registry = var.registry
}

sink "file-sink" "out" {
  group  = "${var.prefix}-out"
  from   = ["%s"]
  path   = "/dev/null"
  format = "json"
  fsync  = false
}
`

// BenchmarkWorkerGroupSinkThroughput compares a file sink's aggregate
// throughput with one `weir run` worker pinned to CPU 0 (taskset -c 0)
// and with two workers of one worker group pinned to CPU 0 and CPU 1,
// alternating 1 and 2 workers in each of 5 rounds (-benchtime=1x). The
// input topic (8 partitions, zstd batches of Avro records) is filled
// once before any timing, so the broker (in the test process, on no
// fixed CPU) only serves fetches; each run is a new consumer group
// reading it from the start. A run's rate is taken between 10% and 90%
// of the records committed (the group's offsets, polled), which leaves
// out process start, joins and the tail. WEIR_BENCH_RECORDS sets the
// record count (default 1,000,000); WEIR_BENCH_PPROF=DIR saves a 5 s CPU
// profile of every worker there (its admin listener's /debug/pprof).
func BenchmarkWorkerGroupSinkThroughput(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Skip("taskset not found")
	}
	bin := weirbin.Build(b)
	br := testbroker.Start(b)
	reg := br.Registry(b)
	n := 1_000_000
	if s := os.Getenv("WEIR_BENCH_RECORDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	topic := fmt.Sprintf("bench-sink-%d", time.Now().UnixNano()%1e9)
	fillAvroTopic(b, br.Addr, reg, topic, 8, n)
	pipeline := fmt.Sprintf(benchSinkPipeline, topic)
	prof := os.Getenv("WEIR_BENCH_PPROF") // a folder: the workers' CPU profiles
	round := 0

	run := func(workers int) (float64, string) {
		g := newGroupWorkers(b, bin, br.Addr, pipeline, "--var", "registry="+reg)
		samples := []sample{{time.Now(), 0}}
		self0, _ := bench.ReadSchedStat(0)
		round++
		var profs sync.WaitGroup
		for w := 0; w < workers; w++ {
			id := fmt.Sprintf("w%d", w+1)
			args := g.args
			if prof != "" {
				addr := testkit.FreeAddr(b)
				g.args = append(slices.Clip(g.args), "--admin-addr", addr)
				profs.Add(1)
				go func() {
					defer profs.Done()
					cpuProfile(b, addr, filepath.Join(prof, fmt.Sprintf("round%d-%dworkers-%s.pprof", (round+1)/2, workers, id)))
				}()
			}
			g.start(id, "", "taskset", "-c", strconv.Itoa(w))
			g.args = args
		}
		deadline := time.Now().Add(10 * time.Minute)
		for samples[len(samples)-1].n < int64(n) {
			if time.Now().After(deadline) {
				b.Fatalf("%d workers: %d of %d records committed after 10 minutes", workers, samples[len(samples)-1].n, n)
			}
			time.Sleep(100 * time.Millisecond)
			samples = append(samples, sample{time.Now(), committedSum(b, br.Addr, g.prefix+"-out")})
		}
		wall := samples[len(samples)-1].t.Sub(samples[0].t)
		profs.Wait()
		var ws []string
		var cpuSum time.Duration
		for _, pid := range weirChildren() {
			st, err := bench.ReadSchedStat(pid)
			if err != nil {
				b.Fatal(err)
			}
			cpuSum += st.CPU
			ws = append(ws, fmt.Sprintf("on a cpu %.0f%%, waiting for one %.0f%%", 100*st.CPU.Seconds()/wall.Seconds(), 100*st.Wait.Seconds()/wall.Seconds()))
		}
		self, _ := bench.ReadSchedStat(0)
		self = self.Sub(self0)
		for _, p := range g.procs {
			p.Kill()
		}
		rate := rateBetween(samples, int64(n)/10, int64(n)*9/10)
		return rate, fmt.Sprintf("%d worker(s) %.0f records/s, whole run %v, workers: %s, %.0f records per worker cpu-second, test process (broker): on a cpu %.0f%% waiting %.0f%%",
			workers, rate, wall.Round(10*time.Millisecond), strings.Join(ws, "; "), float64(n)/cpuSum.Seconds(),
			100*self.CPU.Seconds()/wall.Seconds(), 100*self.Wait.Seconds()/wall.Seconds())
	}
	var ones, twos, ratios []float64
	for i := 0; i < 5; i++ {
		l0 := loadAvg()
		one, d1 := run(1)
		two, d2 := run(2)
		b.Logf("round %d: %.2fx (load %s → %s): %s | %s", i+1, two/one, l0, loadAvg(), d1, d2)
		ones, twos, ratios = append(ones, one), append(twos, two), append(ratios, two/one)
	}
	m1, m2 := median(ones), median(twos)
	b.Logf("medians: 1 worker %.0f records/s, 2 workers %.0f records/s: %.2fx (median of the rounds' ratios %.2fx)", m1, m2, m2/m1, median(ratios))
	b.ReportMetric(m1, "records/s-1worker")
	b.ReportMetric(m2, "records/s-2workers")
	b.ReportMetric(m2/m1, "x-speedup")
}

type sample struct {
	t time.Time
	n int64
}

// rateBetween is the records/s between the moments (interpolated) the
// count crossed from and to.
func rateBetween(s []sample, from, to int64) float64 {
	at := func(v int64) time.Time {
		for i := 1; i < len(s); i++ {
			if s[i].n >= v {
				a, c := s[i-1], s[i]
				if c.n == a.n {
					return c.t
				}
				f := float64(v-a.n) / float64(c.n-a.n)
				return a.t.Add(time.Duration(f * float64(c.t.Sub(a.t))))
			}
		}
		return s[len(s)-1].t
	}
	return float64(to-from) / at(to).Sub(at(from)).Seconds()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// committedSum is the sum of group's committed offsets.
func committedSum(tb testing.TB, addr, group string) int64 {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		return 0 // not yet (coordinator loading, group unknown)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At > 0 {
			sum += o.At
		}
	})
	return sum
}

// fillAvroTopic creates topic with partitions and writes n Avro records
// (Confluent framing, the schema registered as <topic>-value) to it in
// zstd-compressed batches, spread evenly over the partitions.
func fillAvroTopic(tb testing.TB, addr, registry, topic string, partitions int32, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc, err := sr.NewClient(sr.URLs(registry))
	if err != nil {
		tb.Fatal(err)
	}
	ss, err := rc.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: benchSinkSchema, Type: sr.TypeAvro})
	if err != nil {
		tb.Fatal(err)
	}
	serde := schemas.NewSerde(nil)
	serde.Add(int32(ss.ID), schemas.MustParse(benchSinkSchema))
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}}, kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(20*time.Millisecond), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	errc := make(chan error, 1)
	for i := 0; i < n; i++ {
		v, err := serde.Encode(ctx, int32(ss.ID), benchSinkEvent(i))
		if err != nil {
			tb.Fatal(err)
		}
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	select {
	case err := <-errc:
		tb.Fatal(err)
	default:
	}
	tb.Logf("filled %s: %d records in %v", topic, n, time.Since(t0).Round(time.Millisecond))
}

// weirChildren returns the pids of this process's children running weir
// (the workers: sh and taskset exec it).
func weirChildren() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 || !strings.HasSuffix(st[:i], "(weir") {
			continue
		}
		f := strings.Fields(st[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// cpuProfile saves a 5 s CPU profile of the weir process whose admin
// listener is addr, starting a second after it answers.
func cpuProfile(tb testing.TB, addr, path string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Errorf("profile: %s never answered: %v", addr, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // past the joins
	resp, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=5")
	if err != nil {
		tb.Errorf("profile of %s: %v", addr, err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, b)
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		tb.Errorf("profile of %s: %v", addr, err)
	}
}
