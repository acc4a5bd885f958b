package connectors

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Sentinel errors. Connectors wrap them with %w; the runtime tests them
// with errors.Is.
var (
	// ErrRetriable marks a failure that may succeed if tried again (a
	// destination that is down, overloaded or timing out). The runtime
	// retries the same call with exponential backoff and jitter.
	ErrRetriable = errors.New("retriable connector error")
	// ErrBadRecord marks a record that can never be handled (it does not
	// decode, the destination rejects its content). The runtime sends it
	// to the connector's dead-letter topic and moves on.
	ErrBadRecord = errors.New("record cannot be handled")
	// ErrConfig is wrapped by every configuration error; the message names
	// the connector and the setting.
	ErrConfig = errors.New("invalid connector config")
	// ErrUnknownKind is returned by Registry.Lookup for an unregistered
	// connector kind.
	ErrUnknownKind = errors.New("unknown connector kind")
	// ErrStopped is returned by calls on a task that was stopped.
	ErrStopped = errors.New("connector stopped")
	// ErrPositionsLost is returned by a source that ran before and finds
	// no stored position (SourceOptions.RequirePositions).
	ErrPositionsLost = errors.New("source positions lost")
)

// SourceRecord is one record a Source emits, with the source position the
// source reaches once this record is stored.
//
// SourcePartition names an independent stream of the source (one file, one
// binlog, one table); Position is the opaque, source-defined point in that
// stream just after this record (for a file: the byte offset after the
// line). Records of one SourcePartition must be emitted in position order.
// A record with an empty SourcePartition carries no position.
type SourceRecord struct {
	// Topic is the destination topic; empty means the connector's
	// configured topic.
	Topic     string
	Key       []byte // nil: no key (sticky partitioning)
	Value     []byte // nil: a tombstone
	Headers   []kgo.RecordHeader
	Timestamp time.Time // zero: the time of production

	SourcePartition string
	Position        []byte

	// Fields are the event's fields of a source in raw mode (see
	// RawSource); nil otherwise.
	Fields []RawField

	// push is the batch of a pushed record (see PushSource), told the
	// record's fate.
	push *pushBatch
}

// Source reads records from the outside world (files, a binlog, a socket).
//
// Contract:
//   - The runtime calls Open once, then Poll repeatedly from one goroutine,
//     then Close once. Poll and Close are never called concurrently with
//     each other; Committed (optional, see Committer) may be called from
//     another goroutine at any time between Open and Close.
//   - restored maps each SourcePartition to the last Position the runtime
//     stored durably (in the connector offsets topic) and confirmed is in
//     the destination topic. The source resumes just after it. The map is
//     the source's to keep.
//   - Poll appends the next records to buf and returns the extended slice.
//     It blocks until at least one record is ready, ctx is done, or about
//     a second passed (then it may return buf unchanged so the runtime can
//     commit and check for shutdown). After Poll returns, the records and
//     every byte slice in them belong to the runtime: the source must not
//     modify or reuse them.
//   - Backpressure: the runtime stops calling Poll while its producer
//     buffer is full. A source must not drop data because Poll is not
//     being called; it simply stops reading.
//   - Errors: a Poll error wrapping ErrRetriable is retried with backoff;
//     any other error stops the task (the runtime commits what the broker
//     acknowledged first). Close releases resources and returns nil or the
//     first error it met.
type Source interface {
	Open(ctx context.Context, sc SourceContext, restored map[string][]byte) error
	Poll(ctx context.Context, buf []SourceRecord) ([]SourceRecord, error)
	Close() error
}

// Committer is an optional Source capability: Committed is called with the
// positions that were durably stored after the broker acknowledged every
// record up to them (for example to let a file source forget rotated
// files it finished). The map is only valid during the call.
type Committer interface {
	Committed(positions map[string][]byte)
}

// SourceContext is what the runtime gives a Source.
type SourceContext interface {
	// Name is the connector's name (unique among connectors).
	Name() string
	// Logger logs with the connector's name attached.
	Logger() *zap.Logger
	// Metrics are the connector's metrics, for counting what only the
	// source sees (errors reading input, skipped input).
	Metrics() *Metrics
}

// Sink writes records from topics to the outside world.
//
// Contract:
//   - The runtime calls Open once, then Write and Flush serially (never
//     two calls at once, possibly from different goroutines, e.g. a Flush
//     from a rebalance callback), then Close once (after a final Flush).
//   - Write hands the sink the next records of its assigned partitions, in
//     offset order per partition. The sink may buffer them and may keep the
//     *kgo.Record pointers (and their byte slices, which it must not
//     modify) until the Flush that covers them returns; it must not keep rs
//     itself.
//   - Flush blocks until every record passed to Write so far is durably
//     handled: stored by the destination, or given to
//     SinkContext.DeadLetter. Only after Flush returns nil does the runtime
//     commit the consumer-group offsets of those records. The runtime calls
//     Flush on its flush interval, before partitions are revoked, and at
//     shutdown.
//   - Errors: a Write or Flush error wrapping ErrRetriable is retried (the
//     same call, after backoff; the sink keeps its pending records); any
//     other error stops the task without committing, so the records are
//     delivered again after a restart. A record that can never be handled
//     is not an error of Write/Flush: give it to DeadLetter.
type Sink interface {
	Open(ctx context.Context, sc SinkContext) error
	Write(ctx context.Context, rs []*kgo.Record) error
	Flush(ctx context.Context) error
	Close() error
}

// SinkContext is what the runtime gives a Sink.
type SinkContext interface {
	// Name is the connector's name (unique among connectors).
	Name() string
	// Logger logs with the connector's name attached.
	Logger() *zap.Logger
	// Metrics are the connector's metrics (count Retried/Errors here for
	// per-item retries the sink does itself).
	Metrics() *Metrics
	// DeadLetter sends r to the connector's dead-letter topic with err and
	// r's source topic/partition/offset in headers. It does not block on
	// the broker; the runtime waits for the dead-letter writes to be
	// acknowledged before it commits offsets past r. Safe for concurrent
	// use.
	DeadLetter(r *kgo.Record, err error)
}

// PartitionAware is an optional Sink capability: it is told which topic
// partitions the task was assigned or lost (after a final Flush and
// commit), for sinks that keep per-partition state.
type PartitionAware interface {
	Assigned(map[string][]int32)
	Revoked(map[string][]int32)
}
