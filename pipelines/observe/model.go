package observe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Pipeline is a running pipeline seen from outside; pipelines.Runner
// implements it (Runner.Observed).
type Pipeline interface {
	// Graph is the applied configuration's wiring.
	Graph() Graph
	// Counters are every component's totals since the process started
	// and its state, sorted by ID.
	Counters() []Counters
	// Restart stops and starts one component (IDs as in Graph).
	// ErrUnknownComponent when there is none of that name;
	// ErrNotRunningHere when it runs on another worker of the group.
	Restart(ctx context.Context, id string) error
	// Taps is the run's tap hub.
	Taps() *Hub
}

// Sentinel errors of Restart and Resolve.
var (
	ErrUnknownComponent = errors.New("no such component")
	ErrNotRunningHere   = errors.New("component does not run on this worker")
)

// Graph is a pipeline's wiring: components, topics and the edges
// between them (as pipelines.Graph, plus what a viewer needs).
type Graph struct {
	Components []Component `json:"components"`
	Topics     []string    `json:"topics"`
	Edges      []Edge      `json:"edges"`
}

// Component is one source, stream or sink of the graph.
type Component struct {
	ID   string `json:"id"`   // source.x, stream.x, sink.x
	Type string `json:"type"` // source, stream, sink
	// Kind is the connector kind (file, mysql, stdout, ...); streams:
	// "stream" or "aggregate".
	Kind string `json:"kind"`
	// Steps are the block types of its transform steps, in order.
	Steps []string `json:"steps,omitempty"`
}

// Edge is one data flow of the graph: node IDs are component IDs and
// "topic.<name>".
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Counters are one component's totals and state.
type Counters struct {
	ID        string `json:"-"`     // in views, Component.ID
	State     string `json:"state"` // starting, running, failed, stopped
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt is when LastError happened.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	Starts      int        `json:"starts"`
	RecordsIn   float64    `json:"records_in"`
	RecordsOut  float64    `json:"records_out"`
	BytesIn     float64    `json:"bytes_in"`
	BytesOut    float64    `json:"bytes_out"`
	Errors      float64    `json:"errors"`
	DeadLetters float64    `json:"dead_letters"`
	// Lag is records behind the partition ends (sinks, streams) or in
	// flight (sources).
	Lag float64 `json:"lag"`
	// Late counts records an aggregating stream dropped from closed
	// windows.
	Late float64 `json:"late,omitempty"`
	// Topics are the figures per topic the component reads or writes,
	// by topic name: the edges of the graph. nil when the component
	// does not count per topic (its edges then show its totals).
	Topics map[string]TopicCounters `json:"topics,omitempty"`
}

// TopicCounters are one component's figures of one topic: records read
// from it (RecordsIn) or acknowledged on it (RecordsOut), and the errors
// and dead letters of those records (fetch or produce errors, records
// sent to the dead-letter topic).
type TopicCounters struct {
	RecordsIn   float64 `json:"records_in,omitempty"`
	RecordsOut  float64 `json:"records_out,omitempty"`
	Errors      float64 `json:"errors,omitempty"`
	DeadLetters float64 `json:"dead_letters,omitempty"`
}

// Resolve finds the component and transform step a tap name means:
// an ID (source.x), a name only one component has (x), either followed
// by /N (the N-th step, 1-based) or /KIND (the only step of that block
// type).
func (g Graph) Resolve(name string) (c Component, step int, err error) {
	base, stepName, hasStep := strings.Cut(name, "/")
	var found []Component
	for _, x := range g.Components {
		if x.ID == base {
			found = []Component{x}
			break
		}
		if _, n, _ := strings.Cut(x.ID, "."); n == base {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 0:
		return c, 0, fmt.Errorf("%w %q; components: %s", ErrUnknownComponent, base, strings.Join(g.IDs(), ", "))
	case 1:
	default:
		ids := make([]string, len(found))
		for i, x := range found {
			ids[i] = x.ID
		}
		return c, 0, fmt.Errorf("%w %q: several components have that name, say which: %s", ErrUnknownComponent, base, strings.Join(ids, ", "))
	}
	c = found[0]
	if !hasStep {
		return c, 0, nil
	}
	if n, err := strconv.Atoi(stepName); err == nil {
		if n < 1 || n > len(c.Steps) {
			return c, 0, fmt.Errorf("%w: %s has %d transform steps, not a step %d", ErrUnknownComponent, c.ID, len(c.Steps), n)
		}
		return c, n, nil
	}
	for i, k := range c.Steps {
		if k != stepName {
			continue
		}
		if step != 0 {
			return c, 0, fmt.Errorf("%w: %s has several %s steps; name one by number (%s/%d)", ErrUnknownComponent, c.ID, stepName, c.ID, step)
		}
		step = i + 1
	}
	if step == 0 {
		return c, 0, fmt.Errorf("%w: %s has no %q step (steps: %s)", ErrUnknownComponent, c.ID, stepName, strings.Join(c.Steps, ", "))
	}
	return c, step, nil
}

// IDs lists the components' IDs, sorted.
func (g Graph) IDs() []string {
	ids := make([]string, len(g.Components))
	for i, c := range g.Components {
		ids[i] = c.ID
	}
	sort.Strings(ids)
	return ids
}
