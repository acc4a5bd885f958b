package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// SchedStat is a process's scheduler accounting, summed over its threads
// (Linux /proc/PID/task/*/schedstat): time on a CPU and time runnable but
// waiting for one. On a shared machine the second is what a latency tail
// is made of: a client that waits for a CPU as long as it runs cannot
// answer within a few milliseconds however little work it does.
type SchedStat struct {
	CPU, Wait time.Duration
}

// ReadSchedStat reads pid's SchedStat (0 = this process). It returns an
// error where /proc has no schedstat (not Linux, or schedstats off).
func ReadSchedStat(pid int) (SchedStat, error) {
	dir := "/proc/self/task"
	if pid > 0 {
		dir = fmt.Sprintf("/proc/%d/task", pid)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "schedstat"))
	if err != nil || len(files) == 0 {
		return SchedStat{}, fmt.Errorf("no schedstat under %s: %v", dir, err)
	}
	var s SchedStat
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		var run, wait, slices int64
		if _, err := fmt.Sscan(string(b), &run, &wait, &slices); err != nil {
			return SchedStat{}, fmt.Errorf("parsing %s: %w", f, err)
		}
		s.CPU += time.Duration(run)
		s.Wait += time.Duration(wait)
	}
	return s, nil
}

// Sub returns s - o.
func (s SchedStat) Sub(o SchedStat) SchedStat {
	return SchedStat{CPU: s.CPU - o.CPU, Wait: s.Wait - o.Wait}
}

// String formats s for the bench summaries.
func (s SchedStat) String() string {
	return fmt.Sprintf("cpu %.2f s, waited for a cpu %.2f s", s.CPU.Seconds(), s.Wait.Seconds())
}
