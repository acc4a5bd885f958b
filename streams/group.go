package streams

import "fmt"

type storeKind int

const (
	kindKV storeKind = iota
	kindWindow
	kindSession
)

// storeSpec declares a state store; tasks instantiate it (attachStore).
type storeSpec struct {
	id    int // node id of the owning operator: flush order is topological
	name  string
	kind  storeKind
	owner string // source topic (resolved name, internal without prefix) of the tasks that own it
}

// Grouped is a stream grouped by key, ready for an aggregation. Build it
// with GroupByKey or GroupBy.
type Grouped[K, V any] struct {
	s           Stream[K, V]
	ks          Serde[K]
	vs          Serde[V]
	repartition bool
}

// GroupByKey groups s by its current key. If the key may have changed
// since the input topic (Map, SelectKey, FlatMap upstream) or s merges
// several input topics, the aggregation first writes the stream to a
// repartition topic <app>-<store>-repartition keyed by the new key (with
// ks and vs) and aggregates what it reads back, so that every record of a
// key reaches the same task.
func GroupByKey[K, V any](s Stream[K, V], ks Serde[K], vs Serde[V]) Grouped[K, V] {
	if ks == nil || vs == nil {
		s.b.errorf("GroupByKey: key and value serdes are required")
	}
	return Grouped[K, V]{s: s, ks: ks, vs: vs, repartition: s.rekeyed || len(s.srcs) > 1}
}

// GroupBy groups s by fn(key, value): SelectKey then GroupByKey.
func GroupBy[K, V, K2 any](s Stream[K, V], fn func(K, V) K2, ks Serde[K2], vs Serde[V]) Grouped[K2, V] {
	return GroupByKey(SelectKey(s, fn), ks, vs)
}

// input returns the node the aggregation named store hangs off, adding the
// repartition topic when needed, and the source set behind it.
func (g Grouped[K, V]) input(store string, kind storeKind) (*node, map[*node]bool, *storeSpec) {
	b := g.s.b
	if store == "" {
		b.errorf("aggregation needs a store name")
	}
	if _, dup := b.stores[store]; dup {
		b.errorf("store name %q used twice", store)
	}
	spec := &storeSpec{name: store, kind: kind}
	b.stores[store] = spec
	if !g.repartition || g.ks == nil || g.vs == nil {
		return g.s.n, g.s.srcs, spec
	}
	topic := store + "-repartition"
	sink := g.s.derive("REPARTITION-SINK-"+topic, nil)
	sink.sink = &sinkSpec{topic: topic, internal: true, encKey: encoder(g.ks), encValue: encoder(g.vs)}
	sink.make = func(t *task, _ func(rec)) func(rec) { return t.sinkFunc(sink.sink) }
	src := b.add("REPARTITION-SOURCE-"+topic, nil, func(t *task, fwd func(rec)) func(rec) { return fwd })
	src.source = &sourceSpec{topic: topic, internal: true, decKey: decoder(g.ks), decValue: decoder(g.vs)}
	b.sources["\x00"+topic] = src
	return src, map[*node]bool{src: true}, spec
}

// Table is a changelog stream of per-key aggregates. Updates are emitted
// downstream when the store's cache flushes (at every commit, or earlier
// when it is over budget): one record per updated key with its latest
// value, as Kafka Streams' cached KTables do.
type Table[K, V any] struct {
	b    *Builder
	n    *node
	srcs map[*node]bool
}

// ToStream returns the table's updates as a stream.
func (t Table[K, V]) ToStream() Stream[K, V] {
	return Stream[K, V]{b: t.b, n: t.n, srcs: t.srcs}
}

// Aggregate folds each key's values into an A, starting from init(), in a
// store named store backed by the changelog <app>-<store>-changelog.
// Records with a null key (ks encodes it to nil) are dropped.
func Aggregate[K, V, A any](g Grouped[K, V], store string, init func() A, agg func(K, V, A) A, as Serde[A]) Table[K, A] {
	return aggregateKV(g, store, "AGGREGATE-", func(k K, v V, a A, ok bool) (A, error) {
		if !ok {
			a = init()
		}
		return agg(k, v, a), nil
	}, as)
}

// TryAggregate is Aggregate with an aggregator that can fail: the record
// then goes to the dead-letter topic (try.go) and its key's aggregate
// stays as it was.
func TryAggregate[K, V, A any](g Grouped[K, V], store string, init func() A, agg func(K, V, A) (A, error), as Serde[A]) Table[K, A] {
	return aggregateKV(g, store, "TRY-AGGREGATE-", func(k K, v V, a A, ok bool) (A, error) {
		if !ok {
			a = init()
		}
		return agg(k, v, a)
	}, as)
}

// Count counts records per key.
func Count[K, V any](g Grouped[K, V], store string) Table[K, int64] {
	return aggregateKV(g, store, "AGGREGATE-", func(_ K, _ V, n int64, _ bool) (int64, error) { return n + 1, nil }, Int64())
}

// Reduce combines each key's values with fn; the first value of a key is
// its initial aggregate.
func Reduce[K, V any](g Grouped[K, V], store string, fn func(V, V) V) Table[K, V] {
	return aggregateKV(g, store, "AGGREGATE-", func(_ K, v V, a V, ok bool) (V, error) {
		if !ok {
			return v, nil
		}
		return fn(a, v), nil
	}, g.vs)
}

func aggregateKV[K, V, A any](g Grouped[K, V], storeName, op string, fn func(K, V, A, bool) (A, error), as Serde[A]) Table[K, A] {
	b := g.s.b
	in, srcs, spec := g.input(storeName, kindKV)
	n := b.add(op+storeName, []*node{in}, nil)
	spec.id = n.id
	n.store = spec
	ks := g.ks
	n.make = func(t *task, fwd func(rec)) func(rec) {
		s := t.attachStore(spec)
		s.emit = func(k, v []byte) error {
			key, err := ks.Decode(k)
			if err != nil {
				return fmt.Errorf("store %s: key: %w", storeName, err)
			}
			if v == nil {
				fwd(rec{key: key, ts: t.streamTime, tomb: true})
				return nil
			}
			val, err := as.Decode(v)
			if err != nil {
				return fmt.Errorf("store %s: value: %w", storeName, err)
			}
			fwd(rec{key: key, value: val, ts: t.streamTime})
			return nil
		}
		return func(r rec) {
			if t.skip(s) {
				return
			}
			k, kb, ok := storeKey(t, ks, storeName, r)
			if !ok {
				return
			}
			old, ok, err := s.st.Get(kb)
			if err != nil {
				t.fail(err)
				return
			}
			var a A
			if ok {
				if a, err = as.Decode(old); err != nil {
					t.fail(fmt.Errorf("store %s: stored value: %w", storeName, err))
					return
				}
			}
			if a, err = fn(k, as_[V](r.value), a, ok); err != nil {
				t.operatorFailed(n.name, err)
				return
			}
			nb, err := as.Encode(a)
			if err != nil {
				t.fail(fmt.Errorf("%w: store %s value: %v", ErrEncode, storeName, err))
				return
			}
			if err := s.st.Put(kb, nb); err != nil {
				t.fail(err)
			}
		}
	}
	return Table[K, A]{b: b, n: n, srcs: srcs}
}

// as_ is as, named apart from the serde parameters called as.
func as_[T any](v any) T { return as[T](v) }

// storeKey is r's key and its encoding for store; false when there is
// nothing to aggregate: a null key (ks encodes it to nil) is dropped, and
// a key that does not encode fails the task (ErrEncode).
func storeKey[K any](t *task, ks Serde[K], store string, r rec) (K, []byte, bool) {
	k := as_[K](r.key)
	kb, err := ks.Encode(k)
	if err != nil {
		t.fail(fmt.Errorf("%w: store %s key: %v", ErrEncode, store, err))
		return k, nil, false
	}
	return k, kb, kb != nil
}
