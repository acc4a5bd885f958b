package streams

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/deadletter"
	"weir/internal/kafkaclient/partition"
	"weir/streams/internal/store"
)

// producer writes records for a task: outputs, repartition records,
// changelog entries and markers, dead letters.
//
// Contract: send never blocks for long (it may wait for buffer space); done,
// if non-nil, is called exactly once when the broker acknowledged r (with
// r.Offset set) or refused it, possibly from another goroutine. A refusal
// also makes the owner's next commit fail (at-least-once: nothing is
// committed past a record that was not written).
type producer interface {
	send(r *kgo.Record, done func(*kgo.Record, error))
}

// changelogReader reads a changelog partition for restore.
//
// Contract: read calls fn, in offset order, for every record of
// topic/partition from offset from (0 means the start) up to the
// partition's end as of the call, then returns. fn must not keep r.
// progress, if non-nil, is called once with the number of records read will
// visit (an upper bound when the partition was compacted).
type changelogReader interface {
	read(topic string, partition int32, from int64, progress func(total int64), fn func(r *kgo.Record) error) error
}

// taskStore is one state store as instantiated in a task.
type taskStore struct {
	spec      *storeSpec
	st        *store.Store
	changelog string
	// applied: the input offset the last changelog marker covers; input
	// records below it are already reflected in the store.
	applied int64
	// lastMarker: changelog offset of the last marker acknowledged (or
	// read at restore); -1 if none.
	lastMarker atomic.Int64
	// emit, if set, forwards a flushed entry downstream (tables).
	emit func(k, v []byte) error
	// onOpen, if set, runs after restore (windows rebuild their indexes).
	onOpen func() error
	// seen: per repartition source, the highest position applied
	// (dedupe.go); dup: the current record is at or below it.
	seen map[string]*srcPos
	dup  bool
	// lastID, lastPos: the entry of seen the last record used.
	lastID  string
	lastPos *srcPos
}

// TaskMetrics is a snapshot of one task's counters.
type TaskMetrics struct {
	Task            string // <topic>-<partition>
	Processed       int64  // input records processed (including dead-lettered)
	Lag             int64  // high watermark minus the next offset to process
	StoreBytes      int64  // sum over the task's stores: backend + cache
	RestoreTotal    int64  // changelog records to read at the last restore
	Restored        int64  // changelog records read so far
	LateDropped     int64  // (record, window) pairs dropped as past the grace period
	DeadLetters     int64  // records sent to the dead-letter topic
	SkippedReplayed int64  // records skipped because the restored state already had them
	// SkippedDuplicates: repartition records skipped as copies of records
	// already applied (written again by an upstream replay, dedupe.go).
	SkippedDuplicates int64
}

type taskMetrics struct {
	processed, lag, storeBytes, restoreTotal, restored, late, dead, skipped, dups atomic.Int64
}

// task runs one input topic-partition through the nodes reachable from
// that topic's source, with the stores those nodes own.
type task struct {
	id        string
	topo      *Topology
	appID     string
	src       *node
	topic     string // resolved topic name
	partition int32
	out       producer
	dlq       string
	stateDir  string
	openBack  func(dir string) (store.Backend, error)
	cacheMax  int

	built  map[*node]func(rec)
	root   func(rec)
	stores []*taskStore

	streamTime int64
	curOffset  int64
	skipBelow  int64
	next       int64 // next input offset to process (commit position); -1 = none
	epoch      int32
	dirty      bool // records processed since the last marker
	needMarker bool
	// srcID identifies this task in the source headers of its repartition
	// writes; seq numbers the writes caused by the current input record.
	srcID []byte
	seq   uint64
	// hdrBuf, hdrs: chunks the source headers are carved from.
	hdrBuf []byte
	hdrs   []kgo.RecordHeader
	// cur: the input record being processed; emitting: a cache flush is
	// emitting the store entry emitK, emitV of changelog emitTopic. An
	// operator that fails dead-letters the latter if set, else the former.
	cur          *kgo.Record
	emitting     bool
	emitTopic    string
	emitK, emitV []byte
	err          error
	m            taskMetrics
}

func taskID(topic string, p int32) string { return topic + "-" + strconv.Itoa(int(p)) }

func (t *task) internalTopic(name string) string { return t.appID + "-" + name }

func (t *task) fail(err error) {
	if t.err == nil {
		t.err = fmt.Errorf("task %s: %w", t.id, err)
	}
}

// build instantiates n (once per task) and everything below it.
func (t *task) build(n *node) func(rec) {
	if f, ok := t.built[n]; ok {
		return f
	}
	fwds := make([]func(rec), 0, len(n.children))
	for _, c := range n.children {
		fwds = append(fwds, t.build(c))
	}
	var fwd func(rec)
	switch len(fwds) {
	case 0:
		fwd = func(rec) {}
	case 1:
		fwd = fwds[0]
	default:
		fwd = func(r rec) {
			for _, f := range fwds {
				f(r)
			}
		}
	}
	f := n.make(t, fwd)
	t.built[n] = f
	return f
}

func (t *task) sinkFunc(s *sinkSpec) func(rec) {
	topic := s.topic
	if s.internal {
		topic = t.internalTopic(topic)
	}
	return func(r rec) {
		k, err := s.encKey(r.key)
		if err != nil {
			t.fail(fmt.Errorf("%w: key for topic %s: %v", ErrEncode, topic, err))
			return
		}
		var v []byte
		if !r.tomb {
			if v, err = s.encValue(r.value); err != nil {
				t.fail(fmt.Errorf("%w: value for topic %s: %v", ErrEncode, topic, err))
				return
			}
		}
		hs := r.headers
		if s.internal {
			hs = t.withSource(hs)
		}
		t.out.send(&kgo.Record{Topic: topic, Key: k, Value: v, Headers: hs, Timestamp: time.UnixMilli(r.ts)}, nil)
	}
}

// attachStore creates the task's instance of spec (opened by open).
func (t *task) attachStore(spec *storeSpec) *taskStore {
	ts := &taskStore{spec: spec, changelog: t.internalTopic(spec.name + "-changelog"), applied: -1}
	ts.lastMarker.Store(-1)
	t.stores = append(t.stores, ts)
	return ts
}

// skip reports whether the current record is already reflected in s (it
// is being replayed from before s's last marker, or it is a repartition
// copy of a record s applied).
func (t *task) skip(s *taskStore) bool {
	if t.curOffset < s.applied {
		t.m.skipped.Add(1)
		return true
	}
	return s.dup
}

// process runs one input record through the task.
func (t *task) process(kr *kgo.Record) {
	t.next, t.epoch = kr.Offset+1, kr.LeaderEpoch
	t.m.processed.Add(1)
	if kr.Offset < t.skipBelow {
		t.m.skipped.Add(1)
		return
	}
	t.dirty = true
	t.curOffset = kr.Offset
	t.cur = kr
	t.seq = 0
	hs := kr.Headers
	if t.src.source.internal {
		var sv []byte
		var found bool
		hs, sv, found = takeSource(hs)
		id, pos, ok := parseSource(sv)
		switch {
		case found && ok && len(t.stores) > 0:
			if t.dedupe(id, pos) {
				t.m.dups.Add(1)
				return
			}
		default: // written without a position: nothing to compare
			for _, s := range t.stores {
				s.dup = false
			}
		}
	}
	k, err := t.src.source.decKey(kr.Key)
	if err != nil {
		t.deadLetter(kr, fmt.Errorf("key of %s/%d@%d: %w", kr.Topic, kr.Partition, kr.Offset, err))
		return
	}
	v, err := t.src.source.decValue(kr.Value)
	if err != nil {
		t.deadLetter(kr, fmt.Errorf("value of %s/%d@%d: %w", kr.Topic, kr.Partition, kr.Offset, err))
		return
	}
	ts := kr.Timestamp.UnixMilli()
	if et := t.src.source.eventTime; et != nil {
		tm, err := et(k, v, kr.Timestamp)
		if err == nil && tm.Before(time.Unix(0, 0)) {
			err = fmt.Errorf("%s is before the Unix epoch", tm.UTC().Format(time.RFC3339Nano))
		}
		if err != nil {
			t.deadLetter(kr, fmt.Errorf("%w: %s/%d@%d: %v", ErrEventTime, kr.Topic, kr.Partition, kr.Offset, err))
			return
		}
		ts = tm.UnixMilli()
	}
	if ts > t.streamTime {
		t.streamTime = ts
	}
	t.root(rec{key: k, value: v, ts: ts, headers: hs})
}

// deadLetter sends kr to the dead-letter topic with err, in Kafka
// Connect's dead-letter header layout (package deadletter).
func (t *task) deadLetter(kr *kgo.Record, err error) {
	t.m.dead.Add(1)
	t.out.send(deadletter.Record(t.dlq, t.appID, kr.Key, kr.Value, kr.Headers, kr.Timestamp, err, deadletter.Consumed(kr)...), nil)
}

// flush writes every store's dirty entries to its changelog (and
// downstream, for tables) and, if the task moved, a marker per store
// recording the input position and stream time they now cover. The caller
// then waits for all sends to be acknowledged before committing offsets.
func (t *task) flush() error {
	if t.err != nil {
		return t.err
	}
	for _, s := range t.stores {
		if err := s.st.Flush(); err != nil {
			t.fail(err)
			return t.err
		}
	}
	if t.err != nil {
		return t.err
	}
	if (t.dirty || t.needMarker) && t.next >= 0 {
		for _, s := range t.stores {
			s.applied = t.next
			ts := s
			t.out.send(markerRecord(s.changelog, t.partition, t.next, t.streamTime, s.seen), func(r *kgo.Record, err error) {
				if err == nil {
					ts.lastMarker.Store(r.Offset)
				}
			})
		}
		t.needMarker = false
	}
	t.dirty = false
	var sb int64
	for _, s := range t.stores {
		sb += s.st.SizeBytes()
	}
	t.m.storeBytes.Store(sb)
	return nil
}

// changelogRecord is one store entry as written to its changelog: key,
// value (nil for a deletion), pinned to the task's partition.
func changelogRecord(topic string, p int32, k, v []byte) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: k, Value: v}
	partition.Set(r, p)
	return r
}

// open restores every store from its local checkpoint and changelog,
// then instantiates what depends on the restored state.
func (t *task) open(rd changelogReader) error {
	slices.SortFunc(t.stores, func(a, b *taskStore) int { return cmp.Compare(a.spec.id, b.spec.id) })
	t.skipBelow = -1
	for i, s := range t.stores {
		if err := t.restore(s, rd); err != nil {
			return fmt.Errorf("task %s: restoring store %s from %s: %w", t.id, s.spec.name, s.changelog, err)
		}
		if i == 0 || s.applied < t.skipBelow {
			t.skipBelow = s.applied
		}
	}
	for _, s := range t.stores {
		if s.onOpen != nil {
			if err := s.onOpen(); err != nil {
				return fmt.Errorf("task %s: opening store %s: %w", t.id, s.spec.name, err)
			}
		}
	}
	return nil
}

// Metrics returns a snapshot of the task's counters.
// It only reads atomics, so other goroutines (a metrics scrape) may call it.
func (t *task) metrics() TaskMetrics {
	return TaskMetrics{
		Task: t.id, Processed: t.m.processed.Load(), Lag: t.m.lag.Load(), StoreBytes: t.m.storeBytes.Load(),
		RestoreTotal: t.m.restoreTotal.Load(), Restored: t.m.restored.Load(),
		LateDropped: t.m.late.Load(), DeadLetters: t.m.dead.Load(), SkippedReplayed: t.m.skipped.Load(),
		SkippedDuplicates: t.m.dups.Load(),
	}
}
