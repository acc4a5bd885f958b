package console

import (
	"context"
	"time"
)

// Pipelines is where the pipelines page (weir run) gets its data: the
// console does not import pipelines/, so `weir run` passes an adapter
// over its Runner in Config.Pipelines. Implementations are safe for
// concurrent use; ctx bounds each call.
type Pipelines interface {
	// Graph returns the running pipelines' graph with live figures.
	Graph(ctx context.Context) (PipelineGraph, error)
	// Restart restarts the named component (Component.Name); an error
	// wrapping ErrNoComponent when there is none of that name. The
	// console calls it only outside read-only mode.
	Restart(ctx context.Context, component string) error
}

// ErrNoComponent is wrapped by Pipelines.Restart for an unknown name.
var ErrNoComponent = errNoComponent{}

type errNoComponent struct{}

func (errNoComponent) Error() string { return "no such pipeline component" }

// PipelineGraph is the graph of the HCL files `weir run` runs: its nodes
// are sources, streams, sinks and the topics between them.
type PipelineGraph struct {
	Files      []string // the HCL files (paths as given to weir run)
	Components []PipelineComponent
	Edges      []PipelineEdge
	// Worker names this worker in a worker group ("" outside one).
	Worker string
	At     time.Time // when the figures were taken
}

// PipelineComponent is one node of the graph.
type PipelineComponent struct {
	// Name is the HCL address: "source.access", "stream.by_status",
	// "sink.es", or "topic.logs" for a topic node.
	Name string
	// Block is "source", "stream", "sink" or "topic"; Kind the
	// connector kind ("file", "elasticsearch"; "" for streams and
	// topics).
	Block, Kind string
	// State: "running", "starting", "restarting", "failed", "stopped",
	// or "elsewhere" (placed on another worker of the group).
	State string
	// LastError is the component's last error ("" none) and when.
	LastError   string
	LastErrorAt time.Time
	// Rates in records/s over the last interval; totals since start.
	InRate, OutRate       float64
	RecordsIn, RecordsOut int64
	Errors, DeadLetters   int64
	// Lag is the records not yet consumed by a stream or sink (-1:
	// not applicable).
	Lag int64
	// Restartable says Restart applies to it (sources, streams, sinks
	// running on this worker).
	Restartable bool
}

// PipelineEdge is a flow from one component to another (by Name).
type PipelineEdge struct {
	From, To string
	// Rate is records/s over the last interval on this edge; Errors and
	// DeadLetters count the failures of its records since start (and,
	// on a component's only input edge, a source's only output edge,
	// the component's failures tied to no topic: a sink's write, a
	// step's transform).
	Rate                float64
	Errors, DeadLetters int64
	// Shared: the figures are the component's totals, not the edge's
	// alone (a component that does not count per topic, with several
	// edges on that side).
	Shared bool
}
