package observe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// API serves a Pipeline over HTTP (see the package doc for the routes).
type API struct {
	m *Meter
	// ReadOnly refuses restarts (403).
	ReadOnly bool
	// Heartbeat is how often a tap stream with no records writes a
	// keep-alive (SSE comment; NDJSON: nothing) and checks the client
	// (default 15s).
	Heartbeat time.Duration
}

// NewAPI returns the API of p.
func NewAPI(p Pipeline) *API { return &API{m: NewMeter(p)} }

// Meter returns the API's meter (rates shared with other viewers).
func (a *API) Meter() *Meter { return a.m }

// Mounter is where the API mounts its routes (broker/admin.Server,
// http.ServeMux).
type Mounter interface {
	Handle(pattern string, h http.Handler)
}

// Mount adds the routes to mux.
func (a *API) Mount(mux Mounter) {
	mux.Handle("GET /api/v1/pipeline", http.HandlerFunc(a.pipeline))
	mux.Handle("GET /api/v1/tap/{component...}", http.HandlerFunc(a.tap))
	mux.Handle("POST /api/v1/components/{name}/restart", http.HandlerFunc(a.restart))
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, apiError{Error: err.Error()})
}

func (a *API) pipeline(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.m.View())
}

func (a *API) restart(w http.ResponseWriter, r *http.Request) {
	if a.ReadOnly {
		writeErr(w, http.StatusForbidden, errors.New("read-only: restarting components is disabled"))
		return
	}
	c, step, err := a.m.p.Graph().Resolve(r.PathValue("name"))
	if err == nil && step != 0 {
		err = fmt.Errorf("%w: a transform step cannot be restarted alone; restart %s", ErrUnknownComponent, c.ID)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		err = a.m.p.Restart(ctx, c.ID)
	}
	switch {
	case errors.Is(err, ErrUnknownComponent):
		writeErr(w, http.StatusNotFound, err)
	case errors.Is(err, ErrNotRunningHere):
		writeErr(w, http.StatusConflict, err)
	case err != nil:
		writeErr(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, map[string]string{"restarted": c.ID})
	}
}

// runsHere reports whether the component runs in this process (a
// worker group runs a singleton on one worker only).
func (a *API) runsHere(id string) bool {
	for _, c := range a.m.p.Counters() {
		if c.ID == id {
			return true
		}
	}
	return false
}

// TapRequest is a tap's parameters, from the URL of
// GET /api/v1/tap/{component}.
type TapRequest struct {
	Component Component
	Step      int
	Direction string
	Options   SubOptions
	SSE       bool
}

// ParseTap reads a tap request: the component (Graph.Resolve), query
// parameters direction (default: in for sinks, else out; a source
// without transform steps has one: out), step, limit,
// rate (samples/s, "5" or "5/s") and format (ndjson or sse; Accept:
// text/event-stream means sse too).
func ParseTap(g Graph, r *http.Request) (TapRequest, error) {
	var t TapRequest
	q := r.URL.Query()
	name := r.PathValue("component")
	if s := q.Get("step"); s != "" {
		name += "/" + s
	}
	c, step, err := g.Resolve(name)
	if err != nil {
		return t, err
	}
	t.Component, t.Step = c, step
	t.Direction = q.Get("direction")
	switch t.Direction {
	case "":
		t.Direction = Out
		if c.Type == "sink" && step == 0 {
			t.Direction = In
		}
	case In, Out:
		if c.Type == "sink" && step == 0 && t.Direction == Out {
			return t, fmt.Errorf("direction out: the records of %s leave weir; tap its input (direction=in)", c.ID)
		}
	default:
		return t, fmt.Errorf("direction %q: want in or out", t.Direction)
	}
	if c.Type == "source" && len(c.Steps) == 0 && step == 0 {
		// Without transform steps a source emits what it reads: its
		// input is its output.
		t.Direction = Out
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return t, fmt.Errorf("limit %q: want a count of records, 0 for no limit", s)
		}
		t.Options.Limit = n
	}
	if s := q.Get("rate"); s != "" {
		v, err := ParseRate(s)
		if err != nil {
			return t, err
		}
		t.Options.Rate = v
	}
	switch f := q.Get("format"); f {
	case "sse":
		t.SSE = true
	case "ndjson":
	case "":
		t.SSE = strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	default:
		return t, fmt.Errorf("format %q: want ndjson or sse", f)
	}
	return t, nil
}

// ParseRate reads a sample rate: "20", "20/s", "0.5/s".
func ParseRate(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "/s"), 64)
	if err != nil || v <= 0 || v > MaxRate {
		return 0, fmt.Errorf("rate %q: want samples per second, 0 < N ≤ %d (e.g. 10/s)", s, MaxRate)
	}
	return v, nil
}

func (a *API) tap(w http.ResponseWriter, r *http.Request) {
	t, err := ParseTap(a.m.p.Graph(), r)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, ErrUnknownComponent) {
			code = http.StatusNotFound
		}
		writeErr(w, code, err)
		return
	}
	if !a.runsHere(t.Component.ID) {
		writeErr(w, http.StatusConflict, fmt.Errorf("%w: %s (a worker group placed it on another worker: tap it there)", ErrNotRunningHere, t.Component.ID))
		return
	}
	sub, err := a.m.p.Taps().Subscribe(t.Component.ID, t.Step, t.Direction, t.Options)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	defer sub.Close()
	fl, _ := w.(http.Flusher)
	if t.SSE {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	hb := a.Heartbeat
	if hb <= 0 {
		hb = 15 * time.Second
	}
	tick := time.NewTicker(hb)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if t.SSE {
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return
				}
				if fl != nil {
					fl.Flush()
				}
			}
		case s, ok := <-sub.C:
			if !ok {
				return // the limit is reached
			}
			b, _ := json.Marshal(s)
			if t.SSE {
				_, err = fmt.Fprintf(w, "data: %s\n\n", b)
			} else {
				_, err = w.Write(append(b, '\n'))
			}
			if err != nil {
				return
			}
			if fl != nil && len(sub.C) == 0 {
				fl.Flush()
			}
		}
	}
}
