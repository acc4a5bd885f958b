package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkPages: each console page polled once a second (as a browser
// tab with the console's auto-refresh would), against a broker with
// 1,000 topics of 10 partitions (10,000 partitions), 20 consumer groups
// and a registry subject. Reported per page: the p50 and p99 latency of
// its views (issue 20: p99 under 100 ms) and the process's CPU time per
// second of polling, cpu-ms/op (console, its sampler and the in-process
// broker together), beside the baseline idle-1s, the same process's CPU
// per second with no page asked for (the idle broker's own work over its
// 10,000 partitions, GC). added-ms/op = cpu-ms/op - idle; at one view a
// second added-ms/op / 10 is the percentage of one core the console adds
// (issue 20: under 2 %, 20 ms).
//
//	go test -run '^$' -bench BenchmarkPages -benchtime 20x ./console/
//
// CONSOLE_BENCH_EVERY=0 views the pages back to back instead (cpu-ms/op
// is then the CPU of one view, with the shared whole-cluster views
// mostly cached: a profiling aid, not the measure).
func BenchmarkPages(b *testing.B) {
	if testing.Short() {
		b.Skip("creates 10,000 partitions")
	}
	every := time.Second
	if v := os.Getenv("CONSOLE_BENCH_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("CONSOLE_BENCH_EVERY=%q: %v", v, err)
		}
		every = d
	}
	e := bigEnv(b)
	// The baseline, first (before any view starts the sampler): what the
	// process spends per second with no page asked for.
	var idle float64
	b.Run("idle-1s", func(b *testing.B) {
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			time.Sleep(time.Second)
		}
		idle = float64((cpuTime() - cpu0).Microseconds()) / 1000 / float64(b.N)
		b.ReportMetric(idle, "cpu-ms/op")
	})
	// One sample of the sampler (which runs while any page is viewed):
	// the whole cluster's metadata, every partition's end offset, every
	// group's description, committed offsets and lag, taken anew each
	// time. At one sample per SampleInterval (10 s) its share of every
	// page's added-ms/op is cpu-ms/op / 10.
	b.Run("sample", func(b *testing.B) {
		ctx := context.Background()
		stopProfile := profilePage(b, "sample")
		mem := memCount()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			e.c.forgetClusterViews()
			e.c.hist.sample(ctx)
		}
		stopProfile()
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		mem(b)
	})
	// One Metadata request of every topic and its rows (what the cluster
	// page and the topics list take anew every CacheFor).
	b.Run("metadata", func(b *testing.B) {
		ctx := context.Background()
		mem := memCount()
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			if _, err := e.c.loadMeta(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		mem(b)
	})
	for _, p := range []string{"", "?page=50", "topics", "topics?page=10", "topics/t0500", "topics/t0500/records", "groups", "groups/g07", "schemas", "schemas/t0001-value"} {
		name := "cluster"
		if p != "" && p[0] != '?' {
			name = strings.NewReplacer("/", "_", "?", "_").Replace(p)
		} else if p != "" {
			name += "_" + p[1:]
		}
		b.Run(name, func(b *testing.B) {
			url := e.base + p
			get1(b, url) // warm: the first view starts the sampler
			lat := make([]time.Duration, 0, b.N)
			stopProfile := profilePage(b, name)
			mem := memCount()
			cpu0 := cpuTime()
			b.ResetTimer()
			next := time.Now()
			for i := 0; i < b.N; i++ {
				time.Sleep(time.Until(next))
				t0 := time.Now()
				next = t0.Add(every)
				get1(b, url)
				lat = append(lat, time.Since(t0))
			}
			time.Sleep(time.Until(next)) // the last view's second
			b.StopTimer()
			stopProfile()
			cpu := float64((cpuTime() - cpu0).Microseconds()) / 1000 / float64(b.N)
			b.ReportMetric(cpu, "cpu-ms/op")
			mem(b)
			if every == time.Second && idle > 0 {
				b.ReportMetric(cpu-idle, "added-ms/op")
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// profilePage writes a CPU profile of the page's views (not of the
// setup) to $CONSOLE_BENCH_PROFILE/NAME.prof when that is set:
//
//	CONSOLE_BENCH_PROFILE=/tmp/prof go test -run '^$' -bench BenchmarkPages/groups -benchtime 50x ./console/
//	go tool pprof -top /tmp/prof/groups.prof
func profilePage(b *testing.B, name string) (stop func()) {
	dir := os.Getenv("CONSOLE_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name+".prof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// memCount starts counting the process's allocations and GC cycles;
// the function it returns reports them per op (MB-alloc/op, gc/op) and
// the live heap after the last cycle (heap-MB).
func memCount() func(*testing.B) {
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	return func(b *testing.B) {
		var m1 runtime.MemStats
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20)/float64(b.N), "MB-alloc/op")
		b.ReportMetric(float64(m1.NumGC-m0.NumGC)/float64(b.N), "gc/op")
		b.ReportMetric(float64(m1.HeapAlloc)/(1<<20), "heap-MB")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func get1(b *testing.B, url string) {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
}

// bigEnv is an env with 1,000 topics of 10 partitions, one record in
// each partition, 20 groups with committed offsets and a subject.
func bigEnv(b *testing.B) *env {
	e := startEnv(b, envOptions{interval: 10 * time.Second})
	cl := e.b.Client()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var names []string
	for i := 0; i < 1000; i++ {
		names = append(names, fmt.Sprintf("t%04d", i))
	}
	for i := 0; i < len(names); i += 100 {
		rs, err := adm.CreateTopics(ctx, 10, 1, nil, names[i:i+100]...)
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var recs []*kgo.Record
	for _, n := range names {
		for p := int32(0); p < 10; p++ {
			recs = append(recs, &kgo.Record{Topic: n, Partition: p, Value: []byte(`{"x":1}`)})
		}
	}
	pcl := e.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	for g := 0; g < 20; g++ {
		os := kadm.Offsets{}
		for _, n := range names[g*50 : g*50+50] {
			for p := int32(0); p < 10; p++ {
				os.Add(kadm.Offset{Topic: n, Partition: p, At: 0})
			}
		}
		if err := adm.CommitAllOffsets(ctx, fmt.Sprintf("g%02d", g), os); err != nil {
			b.Fatal(err)
		}
	}
	registerAvro(b, e.reg, "t0001-value", pageViewSchema)
	return e
}
