package streams

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rec is a record inside a task: decoded key and value, event time in
// milliseconds, headers. tomb marks a deletion (sinks write a null value).
type rec struct {
	key, value any
	ts         int64
	headers    []kgo.RecordHeader
	tomb       bool
}

// KeyValue is one output of FlatMap.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// node is one operator of the topology graph. make instantiates it for a
// task: it returns the function that processes one record, given fwd, the
// function that passes a record on to the node's children.
type node struct {
	id       int
	name     string
	children []*node
	make     func(t *task, fwd func(rec)) func(rec)

	source *sourceSpec // set on source nodes
	sink   *sinkSpec   // set on sink nodes
	store  *storeSpec  // set on stateful nodes
}

type sourceSpec struct {
	topic    string // internal topics: the name without the app prefix
	internal bool
	decKey   func([]byte) (any, error)
	decValue func([]byte) (any, error)
	// eventTime, if set, gives a decoded record's event time (EventTime).
	eventTime func(k, v any, recordTime time.Time) (time.Time, error)
}

// SourceOption configures a From.
type SourceOption[K, V any] func(*sourceSpec)

// EventTime makes fn the source's timestamp extractor (Kafka Streams'
// TimestampExtractor): each record's event time, which windows and stream
// time use, and which records written downstream (repartition topics
// included) carry, is fn(key, value, recordTime) of the decoded record
// instead of its Kafka timestamp recordTime. A record for which fn fails,
// or returns a time before the Unix epoch (the zero time.Time, say), goes
// to the dead-letter topic with the error (ErrEventTime), and the stream
// goes on.
func EventTime[K, V any](fn func(key K, value V, recordTime time.Time) (time.Time, error)) SourceOption[K, V] {
	return func(s *sourceSpec) {
		s.eventTime = func(k, v any, rt time.Time) (time.Time, error) { return fn(as[K](k), as[V](v), rt) }
	}
}

type sinkSpec struct {
	topic    string
	internal bool
	encKey   func(any) ([]byte, error)
	encValue func(any) ([]byte, error)
}

// Builder collects a topology. It is not safe for concurrent use. Errors
// found while building (bad arguments) are reported by Build.
type Builder struct {
	nodes   []*node
	sources map[string]*node
	stores  map[string]*storeSpec
	errs    []error
}

// NewBuilder returns an empty topology builder.
func NewBuilder() *Builder {
	return &Builder{sources: make(map[string]*node), stores: make(map[string]*storeSpec)}
}

func (b *Builder) errorf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%w: "+format, append([]any{ErrTopology}, args...)...))
}

func (b *Builder) add(name string, parents []*node, mk func(t *task, fwd func(rec)) func(rec)) *node {
	n := &node{id: len(b.nodes), make: mk}
	n.name = fmt.Sprintf("%s-%04d", name, n.id)
	b.nodes = append(b.nodes, n)
	for _, p := range parents {
		p.children = append(p.children, n)
	}
	return n
}

// as converts a boxed value back to T; a nil box is T's zero value.
func as[T any](v any) T {
	t, _ := v.(T)
	return t
}

func decoder[T any](s Serde[T]) func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		v, err := s.Decode(b)
		if err != nil {
			return nil, err
		}
		return v, nil
	}
}

func encoder[T any](s Serde[T]) func(any) ([]byte, error) {
	return func(v any) ([]byte, error) {
		if v == nil {
			return nil, nil
		}
		return s.Encode(as[T](v))
	}
}

// Stream is an unbounded sequence of keyed records. Its methods and the
// package functions over it (Map, MapValues, FlatMap, SelectKey, GroupBy,
// ...) add operators to the Builder it came from.
type Stream[K, V any] struct {
	b    *Builder
	n    *node
	srcs map[*node]bool // source nodes feeding this stream
	// rekeyed: the key may differ from the one the input topic was
	// partitioned by, so grouping needs a repartition topic.
	rekeyed bool
}

func (s Stream[K, V]) derive(name string, mk func(t *task, fwd func(rec)) func(rec)) *node {
	return s.b.add(name, []*node{s.n}, mk)
}

// From reads topic, decoding keys with ks and values with vs. Records that
// fail to decode go to the app's dead-letter topic. Each topic may be read
// by one From per topology. opts: EventTime.
func From[K, V any](b *Builder, topic string, ks Serde[K], vs Serde[V], opts ...SourceOption[K, V]) Stream[K, V] {
	if topic == "" || ks == nil || vs == nil {
		b.errorf("From: topic %q needs a name and key and value serdes", topic)
	}
	if _, dup := b.sources[topic]; dup {
		b.errorf("From: topic %q is already a source of this topology (merge the stream instead)", topic)
	}
	n := b.add("SOURCE-"+topic, nil, func(t *task, fwd func(rec)) func(rec) { return fwd })
	n.source = &sourceSpec{topic: topic}
	if ks != nil && vs != nil {
		n.source.decKey, n.source.decValue = decoder(ks), decoder(vs)
	}
	for _, o := range opts {
		o(n.source)
	}
	b.sources[topic] = n
	return Stream[K, V]{b: b, n: n, srcs: map[*node]bool{n: true}}
}

func (s Stream[K, V]) same(n *node) Stream[K, V] {
	return Stream[K, V]{b: s.b, n: n, srcs: s.srcs, rekeyed: s.rekeyed}
}

// Filter keeps the records for which keep returns true.
func (s Stream[K, V]) Filter(keep func(K, V) bool) Stream[K, V] {
	return s.same(s.derive("FILTER", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			if keep(as[K](r.key), as[V](r.value)) {
				fwd(r)
			}
		}
	}))
}

// FilterNot drops the records for which drop returns true.
func (s Stream[K, V]) FilterNot(drop func(K, V) bool) Stream[K, V] {
	return s.Filter(func(k K, v V) bool { return !drop(k, v) })
}

// Peek calls fn for each record and passes it on unchanged.
func (s Stream[K, V]) Peek(fn func(K, V)) Stream[K, V] {
	return s.same(s.derive("PEEK", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			fn(as[K](r.key), as[V](r.value))
			fwd(r)
		}
	}))
}

// Branch splits the stream: a record goes to the first branch whose
// predicate it satisfies; records that satisfy none are dropped.
func (s Stream[K, V]) Branch(preds ...func(K, V) bool) []Stream[K, V] {
	br := s.derive("BRANCH", nil)
	outs := make([]Stream[K, V], len(preds))
	kids := make([]*node, len(preds))
	for i := range preds {
		kids[i] = s.b.add(fmt.Sprintf("BRANCH%d", i), []*node{br}, func(t *task, fwd func(rec)) func(rec) { return fwd })
		outs[i] = s.same(kids[i])
	}
	br.make = func(t *task, _ func(rec)) func(rec) {
		fwds := make([]func(rec), len(kids))
		for i, k := range kids {
			fwds[i] = t.build(k)
		}
		return func(r rec) {
			k, v := as[K](r.key), as[V](r.value)
			for i, p := range preds {
				if p(k, v) {
					fwds[i](r)
					return
				}
			}
		}
	}
	return outs
}

// Merge interleaves this stream with others. Grouping a merge of streams
// from different input topics repartitions it first.
func (s Stream[K, V]) Merge(others ...Stream[K, V]) Stream[K, V] {
	parents := []*node{s.n}
	srcs := make(map[*node]bool)
	rekeyed := s.rekeyed
	for n := range s.srcs {
		srcs[n] = true
	}
	for _, o := range others {
		if o.b != s.b {
			s.b.errorf("Merge: streams from different builders")
			continue
		}
		parents = append(parents, o.n)
		for n := range o.srcs {
			srcs[n] = true
		}
		rekeyed = rekeyed || o.rekeyed
	}
	n := s.b.add("MERGE", parents, func(t *task, fwd func(rec)) func(rec) { return fwd })
	return Stream[K, V]{b: s.b, n: n, srcs: srcs, rekeyed: rekeyed}
}

// To writes the stream to topic, partitioned by the encoded key with
// Kafka's murmur2 partitioner (internal/kafkaclient/partition), encoding keys with ks and
// values with vs. A record with a deletion marker (a session merged away)
// is written with a null value.
func (s Stream[K, V]) To(topic string, ks Serde[K], vs Serde[V]) {
	if topic == "" || ks == nil || vs == nil {
		s.b.errorf("To: topic %q needs a name and key and value serdes", topic)
		return
	}
	n := s.derive("SINK-"+topic, nil)
	n.sink = &sinkSpec{topic: topic, encKey: encoder(ks), encValue: encoder(vs)}
	n.make = func(t *task, _ func(rec)) func(rec) { return t.sinkFunc(n.sink) }
}

// Map replaces each record's key and value. The key may change, so a
// grouping downstream repartitions.
func Map[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) (K2, V2)) Stream[K2, V2] {
	n := s.derive("MAP", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			k, v := fn(as[K](r.key), as[V](r.value))
			r.key, r.value = k, v
			fwd(r)
		}
	})
	return Stream[K2, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: true}
}

// MapValues replaces each record's value, keeping its key (and so its
// partitioning).
func MapValues[K, V, V2 any](s Stream[K, V], fn func(K, V) V2) Stream[K, V2] {
	n := s.derive("MAPVALUES", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			r.value = fn(as[K](r.key), as[V](r.value))
			fwd(r)
		}
	})
	return Stream[K, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: s.rekeyed}
}

// FlatMap replaces each record by zero or more records.
func FlatMap[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) []KeyValue[K2, V2]) Stream[K2, V2] {
	n := s.derive("FLATMAP", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			for _, kv := range fn(as[K](r.key), as[V](r.value)) {
				out := r
				out.key, out.value = kv.Key, kv.Value
				fwd(out)
			}
		}
	})
	return Stream[K2, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: true}
}

// FlatMapValues replaces each record by zero or more records with the same
// key.
func FlatMapValues[K, V, V2 any](s Stream[K, V], fn func(K, V) []V2) Stream[K, V2] {
	n := s.derive("FLATMAPVALUES", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			for _, v := range fn(as[K](r.key), as[V](r.value)) {
				out := r
				out.value = v
				fwd(out)
			}
		}
	})
	return Stream[K, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: s.rekeyed}
}

// SelectKey sets each record's key to fn(key, value).
func SelectKey[K, V, K2 any](s Stream[K, V], fn func(K, V) K2) Stream[K2, V] {
	n := s.derive("SELECTKEY", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			r.key = fn(as[K](r.key), as[V](r.value))
			fwd(r)
		}
	})
	return Stream[K2, V]{b: s.b, n: n, srcs: s.srcs, rekeyed: true}
}
