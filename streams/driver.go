package streams

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient/partition"
	"weir/streams/internal/store"
)

// DriverConfig configures a TestDriver. Zero fields take the defaults
// noted.
type DriverConfig struct {
	// AppID prefixes internal topic names (default "driver").
	AppID string
	// Partitions gives topics' partition counts (default 1): input topics
	// decide how many tasks run; output topics how records are spread.
	Partitions map[string]int32
	// CacheMaxBytes is each store's write-cache budget (default 10 MiB).
	CacheMaxBytes int
	// CommitEvery commits after every n piped records (default 1, as
	// Kafka's TopologyTestDriver: table updates appear right away).
	CommitEvery int
}

// TestDriver runs a topology on in-memory topics without a broker: Pipe
// feeds input records, which run through the tasks synchronously
// (including repartition topics), and Output returns what was written.
// Stores are in memory and their changelogs are kept, so Crash can test
// restore and replay. Not safe for concurrent use.
type TestDriver struct {
	tp        *Topology
	cfg       DriverConfig
	parts     map[string]int32 // by source key
	topics    map[string][][]*kgo.Record
	tasks     map[string]*task // by topic-partition id
	committed map[string]int64 // by task id
	queue     []*kgo.Record
	piped     int
	err       error
	// dropAfter, when positive, counts down sends; at zero every later
	// send is silently lost, as if the instance died mid-flush (tests).
	dropAfter int
	dropping  bool
}

// NewTestDriver starts a driver for tp.
func NewTestDriver(tp *Topology, cfg DriverConfig) (*TestDriver, error) {
	if cfg.AppID == "" {
		cfg.AppID = "driver"
	}
	if cfg.CacheMaxBytes == 0 {
		cfg.CacheMaxBytes = 10 << 20
	}
	if cfg.CommitEvery <= 0 {
		cfg.CommitEvery = 1
	}
	ext := make(map[string]int32)
	for _, src := range tp.sources {
		if !src.source.internal {
			ext[src.source.topic] = 1
			if n, ok := cfg.Partitions[src.source.topic]; ok {
				ext[src.source.topic] = n
			}
		}
	}
	parts, err := tp.partitionCounts(ext)
	if err != nil {
		return nil, err
	}
	d := &TestDriver{tp: tp, cfg: cfg, parts: parts, topics: make(map[string][][]*kgo.Record), committed: make(map[string]int64)}
	if err := d.startTasks(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *TestDriver) partitionsOf(topic string) int32 {
	for _, src := range d.tp.sources {
		if topicName(d.cfg.AppID, src) == topic {
			return d.parts[sourceKey(src)]
		}
	}
	for _, s := range d.tp.stores {
		if d.cfg.AppID+"-"+s.name+"-changelog" == topic {
			return d.parts[s.owner]
		}
	}
	if n, ok := d.cfg.Partitions[topic]; ok {
		return n
	}
	return 1
}

func (d *TestDriver) startTasks() error {
	d.tasks = make(map[string]*task)
	for _, src := range d.tp.sources {
		for p := range d.parts[sourceKey(src)] {
			t := d.tp.newTask(d.cfg.AppID, src, p)
			t.out = d
			t.dlq = d.cfg.AppID + "-dlq"
			t.cacheMax = d.cfg.CacheMaxBytes
			t.openBack = func(string) (store.Backend, error) { return store.NewMem(), nil }
			if err := t.open(d); err != nil {
				return err
			}
			d.tasks[t.id] = t
		}
	}
	return nil
}

// send implements producer: the record is appended to its in-memory topic
// and acknowledged at once; repartition records are queued for their task.
func (d *TestDriver) send(r *kgo.Record, done func(*kgo.Record, error)) {
	if d.dropping {
		return
	}
	if d.dropAfter > 0 {
		if d.dropAfter--; d.dropAfter == 0 {
			d.dropping = true
		}
	}
	d.append(r, done)
}

func (d *TestDriver) append(r *kgo.Record, done func(*kgo.Record, error)) {
	n := d.partitionsOf(r.Topic)
	switch {
	case partition.IsSet(r):
	case r.Key != nil:
		r.Partition = int32(partition.ForKey(r.Key, int(n)))
	default:
		r.Partition = 0
	}
	if r.Partition < 0 || r.Partition >= n {
		err := fmt.Errorf("%w: topic %s has no partition %d", ErrProduce, r.Topic, r.Partition)
		d.err = errors.Join(d.err, err)
		if done != nil {
			done(r, err)
		}
		return
	}
	parts := d.topics[r.Topic]
	if parts == nil {
		parts = make([][]*kgo.Record, n)
		d.topics[r.Topic] = parts
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = time.Now()
	}
	r.Offset = int64(len(parts[r.Partition]))
	parts[r.Partition] = append(parts[r.Partition], r)
	if _, ok := d.tasks[taskID(r.Topic, r.Partition)]; ok {
		d.queue = append(d.queue, r)
	}
	if done != nil {
		done(r, nil)
	}
}

// read implements changelogReader over the in-memory topics.
func (d *TestDriver) read(topic string, p int32, from int64, progress func(int64), fn func(*kgo.Record) error) error {
	parts := d.topics[topic]
	if int(p) >= len(parts) {
		return nil
	}
	recs := parts[p]
	if from > int64(len(recs)) {
		from = int64(len(recs))
	}
	if progress != nil {
		progress(int64(len(recs)) - from)
	}
	for _, r := range recs[from:] {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Pipe writes a record to input topic (partitioned by key as a producer
// would) and runs everything it causes.
func (d *TestDriver) Pipe(topic string, key, value []byte, ts time.Time, headers ...kgo.RecordHeader) error {
	if d.err != nil {
		return d.err
	}
	if d.tasks == nil {
		return ErrClosed
	}
	if _, ok := d.tasks[taskID(topic, 0)]; !ok {
		return fmt.Errorf("%w: %s is not an input topic of the topology", ErrConfig, topic)
	}
	d.append(&kgo.Record{Topic: topic, Key: key, Value: value, Timestamp: ts, Headers: headers}, nil)
	if err := d.drain(); err != nil {
		return err
	}
	d.piped++
	if d.piped%d.cfg.CommitEvery == 0 {
		return d.Commit()
	}
	return nil
}

func (d *TestDriver) drain() error {
	for len(d.queue) > 0 {
		r := d.queue[0]
		d.queue = d.queue[1:]
		t := d.tasks[taskID(r.Topic, r.Partition)]
		t.process(r)
		if t.err != nil {
			d.err = t.err
			return t.err
		}
	}
	return d.err
}

// Commit flushes every task's stores (emitting table updates and writing
// changelogs and markers) until nothing more is produced, then records the
// tasks' positions as committed.
func (d *TestDriver) Commit() error {
	for range 100 {
		for _, id := range d.taskIDs() {
			if err := d.tasks[id].flush(); err != nil {
				d.err = err
				return err
			}
		}
		if len(d.queue) == 0 {
			break
		}
		if err := d.drain(); err != nil {
			return err
		}
	}
	if d.dropping {
		// The writes were lost: a dead instance commits nothing.
		return d.err
	}
	for id, t := range d.tasks {
		if t.next >= 0 {
			d.committed[id] = t.next
		}
	}
	return d.err
}

func (d *TestDriver) taskIDs() []string {
	ids := make([]string, 0, len(d.tasks))
	for id := range d.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Crash drops every task without committing (their stores are lost, as
// with a killed instance), starts new ones that restore from the
// changelogs, and redelivers every input record after the last committed
// offsets, as a consumer group would to the next owner.
func (d *TestDriver) Crash() error {
	for _, t := range d.tasks {
		t.close(false)
	}
	d.queue = nil
	d.dropping, d.dropAfter = false, 0
	if err := d.startTasks(); err != nil {
		return err
	}
	for _, id := range d.taskIDs() {
		t := d.tasks[id]
		parts := d.topics[t.topic]
		if int(t.partition) >= len(parts) {
			continue
		}
		from := d.committed[id]
		d.queue = append(d.queue, parts[t.partition][from:]...)
	}
	// Redeliver in offset order per partition; the queue then also
	// carries what the replay writes to repartition topics.
	if err := d.drain(); err != nil {
		return err
	}
	return d.Commit()
}

// Output returns the records written to topic so far, by partition then
// offset. Internal topics are named <app>-<name>.
func (d *TestDriver) Output(topic string) []*kgo.Record {
	var out []*kgo.Record
	for _, p := range d.topics[topic] {
		out = append(out, p...)
	}
	return out
}

// Metrics returns every task's counters.
func (d *TestDriver) Metrics() []TaskMetrics {
	var out []TaskMetrics
	for _, id := range d.taskIDs() {
		out = append(out, d.tasks[id].metrics())
	}
	return out
}

// Close commits and closes the tasks.
func (d *TestDriver) Close() error {
	if d.tasks == nil {
		return nil
	}
	err := d.Commit()
	for _, t := range d.tasks {
		err = errors.Join(err, t.close(err == nil))
	}
	d.tasks = nil
	return err
}

// PipeKV encodes k and v with ks and vs and pipes them.
func PipeKV[K, V any](d *TestDriver, topic string, ks Serde[K], vs Serde[V], k K, v V, ts time.Time) error {
	kb, err := ks.Encode(k)
	if err != nil {
		return err
	}
	vb, err := vs.Encode(v)
	if err != nil {
		return err
	}
	return d.Pipe(topic, kb, vb, ts)
}

// ReadKV decodes topic's records with ks and vs, in output order.
func ReadKV[K, V any](d *TestDriver, topic string, ks Serde[K], vs Serde[V]) ([]KeyValue[K, V], error) {
	var out []KeyValue[K, V]
	for _, r := range d.Output(topic) {
		k, err := ks.Decode(r.Key)
		if err != nil {
			return nil, err
		}
		v, err := vs.Decode(r.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, KeyValue[K, V]{Key: k, Value: v})
	}
	return out, nil
}
