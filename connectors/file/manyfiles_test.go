package file

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/broker/brokertest/testbroker"
)

// rssLimit is issue 7's bound on resident memory while tailing 1,000
// files.
const rssLimit = 256 << 20

// TestThousandFilesMemory tails 1,000 files at once (all open together)
// through the file source, the connector runtime and an in-process weir
// broker with the schema registry — the pieces `weir run` puts in one
// process — and samples this process's resident memory (VmRSS in
// /proc/self/status) every 20 ms. Each file gets 100 lines, then 100 more
// while every file is open; the topic must hold all 200,000 lines once,
// and the peak VmRSS must stay under 256 MiB. The baseline is the VmRSS
// with the broker and registry up, before the source starts.
//
//	go test ./connectors/file -run ThousandFilesMemory -v -count 5
func TestThousandFilesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 1,000 files, 200,000 lines")
	}
	const files, lines = 1000, 100
	e := newEnv(t)
	dir := filepath.Join(e.dir, "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := func(i int) string { return filepath.Join(dir, fmt.Sprintf("app-%04d.log", i)) }
	for i := 0; i < files; i++ {
		appendLines(t, path(i), fmt.Sprintf("f%04d", i), 0, lines)
	}
	e.b.CreateTopic("many", 4, nil)
	adm := kadm.NewClient(e.b.Client())
	total := func() int64 {
		ends, err := adm.ListEndOffsets(context.Background(), "many")
		if err != nil {
			return -1
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}

	debug.FreeOSMemory()
	base := vmRSS(t)
	var mu sync.Mutex
	peak, maxFDs := base, 0
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			rss := vmRSS(t)
			fds := openFDs()
			mu.Lock()
			peak, maxFDs = max(peak, rss), max(maxFDs, fds)
			mu.Unlock()
		}
	}()

	o := e.options("many", filepath.Join(dir, "*.log"))
	o.RescanInterval, o.PollInterval = time.Second, 100*time.Millisecond
	start := time.Now()
	stop := e.run("many", o)
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if n := total(); n < files*lines {
			return fmt.Errorf("%d of %d lines in the topic", n, files*lines)
		}
		return nil
	})
	first := time.Since(start)
	// Every file is open now: write to all of them again.
	for i := 0; i < files; i++ {
		appendLines(t, path(i), fmt.Sprintf("f%04d", i), lines, 2*lines)
	}
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if n := total(); n < 2*files*lines {
			return fmt.Errorf("%d of %d lines in the topic", n, 2*files*lines)
		}
		return nil
	})
	close(done)
	<-sampled
	stop()
	mu.Lock()
	peakRSS, fds := peak, maxFDs
	mu.Unlock()
	t.Logf("1,000 files: baseline VmRSS %.1f MiB (broker + registry), peak VmRSS %.1f MiB while tailing (limit %d MiB); %d open descriptors at most; first 100,000 lines in %s",
		mib(base), mib(peakRSS), rssLimit>>20, fds, first.Round(time.Millisecond))
	if fds < files {
		t.Errorf("at most %d descriptors were open: the 1,000 files were not tailed at once", fds)
	}
	if peakRSS >= rssLimit {
		t.Errorf("peak VmRSS %.1f MiB, over the %d MiB limit", mib(peakRSS), rssLimit>>20)
	}

	// Content: every line of every file once.
	evs := e.events("many")
	if len(evs) != 2*files*lines {
		t.Fatalf("%d records, want %d", len(evs), 2*files*lines)
	}
	seen := make(map[string]bool, len(evs))
	for _, ev := range evs {
		k := ev.Message
		if seen[k] {
			t.Fatalf("line %q twice", k)
		}
		seen[k] = true
		f, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(ev.File), "app-"), ".log"))
		if err != nil || !strings.HasPrefix(ev.Message, fmt.Sprintf("f%04d line ", f)) {
			t.Fatalf("line %q from %s", ev.Message, ev.File)
		}
	}
}

// vmRSS reads this process's resident set size from /proc/self/status.
func vmRSS(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", sc.Text(), err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
