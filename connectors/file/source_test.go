package file

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func messages(evs []event) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[e.Message]++
	}
	return m
}

func checkLines(t *testing.T, evs []event, prefix string, from, to int) {
	t.Helper()
	m := messages(evs)
	for i := from; i < to; i++ {
		l := fmt.Sprintf("%s line %06d with some padding to look like a log line", prefix, i)
		if m[l] != 1 {
			t.Fatalf("%q seen %d times", l, m[l])
		}
	}
}

func TestTailRotationsAndSmallFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	appendLines(t, e.path("a.log"), "a", 0, 1000)
	appendLines(t, e.path("small.log"), "s", 0, 2) // shorter than the fingerprint
	o := e.options("logs", e.path("*.log*"))
	o.Exclude = []string{"*.gz"}
	os.WriteFile(e.path("old.log.gz"), []byte("not text\n"), 0o644)
	stop := e.run("tail", o)
	evs := e.waitMessages("logs", 1002)
	checkLines(t, evs, "a", 0, 1000)
	checkLines(t, evs, "s", 0, 2)
	for _, ev := range evs {
		if ev.Host != "testhost" || !strings.HasSuffix(ev.File, ".log") {
			t.Fatalf("event %+v", ev)
		}
	}
	// The small file grows past the fingerprint: no line is read twice.
	appendLines(t, e.path("small.log"), "s", 2, 100)
	// Rotation by rename, then a new file at the old path.
	appendLines(t, e.path("a.log"), "a", 1000, 1500)
	if err := os.Rename(e.path("a.log"), e.path("a.log.1")); err != nil {
		t.Fatal(err)
	}
	appendLines(t, e.path("a.log.1"), "a", 1500, 1600) // the writer still had it open
	appendLines(t, e.path("a.log"), "a", 1600, 2000)
	evs = e.waitMessages("logs", 2100)
	checkLines(t, evs, "a", 0, 2000)
	checkLines(t, evs, "s", 0, 100)
	// Copytruncate: copy, truncate, keep writing.
	appendLines(t, e.path("a.log"), "a", 2000, 2100)
	waitEvents(t, e, 2200)
	appendLines(t, e.path("a.log"), "a", 2100, 2150) // written after our last read, before the copy
	data, _ := os.ReadFile(e.path("a.log"))
	os.WriteFile(e.path("a.log.2.tmp"), data, 0o644)
	os.Rename(e.path("a.log.2.tmp"), e.path("a.log.2"))
	os.Truncate(e.path("a.log"), 0)
	appendLines(t, e.path("a.log"), "a", 2150, 2300)
	e.waitMessages("logs", 2400)
	stop()
	evs = e.events("logs")
	checkLines(t, evs, "a", 0, 2300)
	checkLines(t, evs, "s", 0, 100)
	if len(evs) != 2400 {
		t.Fatalf("%d events, want 2400", len(evs))
	}
	// Offsets point at the line in its file.
	for _, ev := range evs[:50] {
		b, _ := os.ReadFile(ev.File)
		if ev.File == e.path("a.log.1") && !bytes.HasPrefix(b[ev.Offset:], []byte(ev.Message)) {
			t.Fatalf("offset %d of %s does not hold %q", ev.Offset, ev.File, ev.Message)
		}
	}
	// Restart: nothing is read again; new lines continue.
	appendLines(t, e.path("a.log"), "a", 2300, 2400)
	e.run("tail", o)
	evs = e.waitMessages("logs", 2500)
	checkLines(t, evs, "a", 0, 2400)
	m := e.ms.For("tail")
	if v := counter(m.EventCounter("file_truncated")); v < 1 {
		t.Fatalf("file_truncated events %v", v)
	}
}

func waitEvents(t *testing.T, e *env, n int) { e.waitMessages("logs", n) }

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
