//go:build linux

package bench

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time by getrusage.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestReadSchedStatCountsCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat on this kernel")
	}
	before, err := ReadSchedStat(0)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel's rusage says this process has used 50 ms more
	// CPU (a wall-time spin may get no CPU at all on a loaded machine).
	x := 0
	for start := cpuTime(t); cpuTime(t)-start < 50*time.Millisecond; {
		for i := 0; i < 1e5; i++ {
			x++
		}
	}
	after, err := ReadSchedStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.CPU < 25*time.Millisecond || d.CPU > 10*time.Second || d.Wait < 0 {
		t.Fatalf("schedstat delta %v over a spin of 50 ms of CPU by rusage (x=%d)", d, x)
	}
	if s := d.String(); s == "" {
		t.Fatal("empty String")
	}
	if _, err := ReadSchedStat(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
