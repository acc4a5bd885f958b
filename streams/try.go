package streams

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Operators that can fail. The Try variants take functions that return an
// error; a record for which one fails goes to the dead-letter topic with
// the error (ErrOperator, naming the operator) in Kafka Connect's error
// headers, and the stream goes on. The dead letter is the task's input
// record being processed, as read from its topic (behind a repartition,
// the repartition record: key and value in the grouping's serdes), or,
// for an operator downstream of a table whose update a cache flush
// emitted, the store entry (key and value in the store's serdes, under
// the changelog topic's name, offset -1). One dead letter per failure: a
// record that fails in two branches is dead-lettered twice.

// operatorFailed dead-letters the record the task is working on.
func (t *task) operatorFailed(op string, err error) {
	r := t.cur
	if t.emitting {
		r = &kgo.Record{Topic: t.emitTopic, Partition: t.partition, Offset: -1, Key: t.emitK, Value: t.emitV}
	}
	if r == nil {
		r = &kgo.Record{Topic: t.topic, Partition: t.partition, Offset: -1}
	}
	t.deadLetter(r, fmt.Errorf("%w: %s on %s/%d@%d: %v", ErrOperator, op, r.Topic, r.Partition, r.Offset, err))
}

// TryFilter keeps the records for which keep returns true; a record for
// which it fails goes to the dead-letter topic.
func (s Stream[K, V]) TryFilter(keep func(K, V) (bool, error)) Stream[K, V] {
	var n *node
	n = s.derive("TRY-FILTER", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			ok, err := keep(as[K](r.key), as[V](r.value))
			if err != nil {
				t.operatorFailed(n.name, err)
				return
			}
			if ok {
				fwd(r)
			}
		}
	})
	return s.same(n)
}

// TryMap is Map with a function that can fail (the record goes to the
// dead-letter topic).
func TryMap[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) (K2, V2, error)) Stream[K2, V2] {
	var n *node
	n = s.derive("TRY-MAP", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			k, v, err := fn(as[K](r.key), as[V](r.value))
			if err != nil {
				t.operatorFailed(n.name, err)
				return
			}
			r.key, r.value = k, v
			fwd(r)
		}
	})
	return Stream[K2, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: true}
}

// TryMapValues is MapValues with a function that can fail (the record
// goes to the dead-letter topic).
func TryMapValues[K, V, V2 any](s Stream[K, V], fn func(K, V) (V2, error)) Stream[K, V2] {
	var n *node
	n = s.derive("TRY-MAPVALUES", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			v, err := fn(as[K](r.key), as[V](r.value))
			if err != nil {
				t.operatorFailed(n.name, err)
				return
			}
			r.value = v
			fwd(r)
		}
	})
	return Stream[K, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: s.rekeyed}
}

// TryFlatMap is FlatMap with a function that can fail: then the record
// goes to the dead-letter topic and none of its outputs downstream.
func TryFlatMap[K, V, K2, V2 any](s Stream[K, V], fn func(K, V) ([]KeyValue[K2, V2], error)) Stream[K2, V2] {
	var n *node
	n = s.derive("TRY-FLATMAP", func(t *task, fwd func(rec)) func(rec) {
		return func(r rec) {
			kvs, err := fn(as[K](r.key), as[V](r.value))
			if err != nil {
				t.operatorFailed(n.name, err)
				return
			}
			for _, kv := range kvs {
				out := r
				out.key, out.value = kv.Key, kv.Value
				fwd(out)
			}
		}
	})
	return Stream[K2, V2]{b: s.b, n: n, srcs: s.srcs, rekeyed: true}
}
