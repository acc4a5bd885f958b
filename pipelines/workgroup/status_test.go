package workgroup

import (
	"encoding/json"
	"testing"
	"time"
)

// A worker killed -9 leaves the records of components it ran; once it
// reports again, those written before its new run started are not
// shown, even when it could not delete them.
func TestStatusLeavesOutAKilledRunsComponents(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC)
	rd := NewStatusReader("g")
	add := func(key string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		if err := rd.AddRecord([]byte(key), b); err != nil {
			t.Fatal(err)
		}
	}
	comp := func(c, w string, at time.Time) {
		add(ComponentKey("g", c, w), ComponentStatus{Group: "g", Component: c, Worker: w, State: "running", At: at})
	}
	// The first run of w1 ran source.shop; w2 runs it now.
	add(WorkerKey("g", "w1"), WorkerStatus{Group: "g", Worker: "w1", State: "running", Started: t0, At: t0.Add(10 * time.Second)})
	comp("source.shop", "w1", t0.Add(10*time.Second))
	comp("sink.rows", "w1", t0.Add(10*time.Second))
	comp("source.shop", "w2", t0.Add(20*time.Second))
	if got := names(rd.Status()); got != "sink.rows/w1 source.shop/w1 source.shop/w2" {
		t.Fatalf("before the restart: %s", got)
	}
	// w1 starts again at t0+30s and reports only sink.rows.
	add(WorkerKey("g", "w1"), WorkerStatus{Group: "g", Worker: "w1", State: "running", Started: t0.Add(30 * time.Second), At: t0.Add(30 * time.Second)})
	comp("sink.rows", "w1", t0.Add(30*time.Second))
	if got := names(rd.Status()); got != "sink.rows/w1 source.shop/w2" {
		t.Fatalf("after the restart: %s", got)
	}
	// A worker record of an older version (no Started) hides nothing.
	add(WorkerKey("g", "w2"), WorkerStatus{Group: "g", Worker: "w2", State: "running", At: t0.Add(40 * time.Second)})
	if got := names(rd.Status()); got != "sink.rows/w1 source.shop/w2" {
		t.Fatalf("worker record without started: %s", got)
	}
}

func names(st Status) string {
	s := ""
	for _, c := range st.Components {
		if s != "" {
			s += " "
		}
		s += c.Component + "/" + c.Worker
	}
	return s
}
