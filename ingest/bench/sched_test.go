package bench

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestReadSchedStatCountsCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("schedstat is Linux's")
	}
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat on this kernel")
	}
	before, err := ReadSchedStat(0)
	if err != nil {
		t.Fatal(err)
	}
	// Spin for 50 ms of wall time: at least some of it is on a CPU.
	x := 0
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	after, err := ReadSchedStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.CPU < 5*time.Millisecond || d.CPU > 10*time.Second || d.Wait < 0 {
		t.Fatalf("schedstat delta %v over a 50 ms spin (x=%d)", d, x)
	}
	if s := d.String(); s == "" {
		t.Fatal("empty String")
	}
	if _, err := ReadSchedStat(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
