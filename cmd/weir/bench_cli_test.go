package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// weir bench roundtrip runs every mode against the weir broker, and
// --cpuprofile/--trace write non-empty files.
func TestBenchRoundTripAndProfiles(t *testing.T) {
	b := startTestBroker(t, 1, kmsg.CreateTopics)
	dir := t.TempDir()
	cpu, tr := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "trace.out")
	out := mustWeir(t, "", "bench", "roundtrip", "--brokers", b, "--topic", "rtt", "--mode", "all",
		"--records", "200", "--warmup", "10", "--cpuprofile", cpu, "--trace", tr)
	for _, m := range []string{"kgo", "raw-produce", "raw-apiversions"} {
		if !strings.Contains(out, m+": 200 round trips") || !strings.Contains(out, "ms 99th") {
			t.Fatalf("roundtrip output lacks %s:\n%s", m, out)
		}
	}
	for _, f := range []string{cpu, tr} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("profile %s: %v (size %v)", f, err, st)
		}
	}
	out = mustWeir(t, "", "bench", "produce", "--brokers", b, "--topic", "bw", "--records", "3000", "--warmup-records", "1000", "--partitions", "0", "--report-interval", "-1s")
	if !strings.Contains(out, "2000 records sent (after 1000 warm-up records)") || (runtime.GOOS == "linux" && !strings.Contains(out, "load generator process: cpu ")) {
		t.Fatalf("bench produce with warm-up:\n%s", out)
	}
	if _, _, err := runWeir(t, "", "bench", "roundtrip", "--brokers", b, "--mode", "nope"); err == nil {
		t.Fatal("an unknown --mode was accepted")
	}
}
