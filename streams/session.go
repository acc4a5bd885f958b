package streams

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// SessionGrouped is a grouped stream cut into session windows.
type SessionGrouped[K, V any] struct {
	g Grouped[K, V]
	w SessionWindows
}

// SessionWindowedBy cuts g into sessions.
func SessionWindowedBy[K, V any](g Grouped[K, V], w SessionWindows) SessionGrouped[K, V] {
	if w.Gap < time.Millisecond || w.Grace < 0 {
		g.s.b.errorf("SessionWindowedBy: want Gap >= 1ms and Grace >= 0; got %+v", w)
	}
	return SessionGrouped[K, V]{g: g, w: w}
}

// CountSessions counts records per key and session.
func CountSessions[K, V any](sg SessionGrouped[K, V], store string) Stream[Windowed[K], int64] {
	return AggregateSessions(sg, store, func() int64 { return 0 },
		func(_ K, _ V, n int64) int64 { return n + 1 },
		func(_ K, a, b int64) int64 { return a + b }, Int64())
}

// AggregateSessions folds each key's values per session. When a record
// bridges sessions, their aggregates are combined with merge (starting
// from init()) before the record is folded in. Windowed.End of a session
// is its last record's timestamp.
func AggregateSessions[K, V, A any](sg SessionGrouped[K, V], store string, init func() A, agg func(K, V, A) A, merge func(K, A, A) A, as Serde[A]) Stream[Windowed[K], A] {
	return aggregateSessions(sg, store, "SESSION-AGGREGATE-", init,
		func(k K, v V, a A) (A, error) { return agg(k, v, a), nil },
		func(k K, a, b A) (A, error) { return merge(k, a, b), nil }, as)
}

// TryAggregateSessions is AggregateSessions with an aggregator and a
// merger that can fail: the record then goes to the dead-letter topic
// (try.go) and the key's sessions stay as they were (none merged).
func TryAggregateSessions[K, V, A any](sg SessionGrouped[K, V], store string, init func() A, agg func(K, V, A) (A, error), merge func(K, A, A) (A, error), as Serde[A]) Stream[Windowed[K], A] {
	return aggregateSessions(sg, store, "TRY-SESSION-AGGREGATE-", init, agg, merge, as)
}

func aggregateSessions[K, V, A any](sg SessionGrouped[K, V], store, op string, init func() A, agg func(K, V, A) (A, error), merge func(K, A, A) (A, error), as Serde[A]) Stream[Windowed[K], A] {
	b := sg.g.s.b
	in, srcs, spec := sg.g.input(store, kindSession)
	n := b.add(op+store, []*node{in}, nil)
	spec.id = n.id
	n.store = spec
	gap, grace := sg.w.Gap.Milliseconds(), sg.w.Grace.Milliseconds()
	final := sg.w.EmitFinal
	ks := sg.g.ks
	n.make = func(t *task, fwd func(rec)) func(rec) {
		s := t.attachStore(spec)
		h := &winHeap{}
		s.onOpen = func() error {
			return s.st.Scan(func(k, v []byte) error {
				ss, err := decodeSessions(v)
				if err != nil {
					return fmt.Errorf("store %s key %x: %w", store, k, err)
				}
				for _, x := range ss {
					heap.Push(h, winRef{end: x.end, start: x.start, key: string(k)})
				}
				return nil
			})
		}
		out := func(k K, x session, tomb bool, ts int64) {
			r := rec{key: Windowed[K]{Key: k, Start: time.UnixMilli(x.start), End: time.UnixMilli(x.end)}, ts: ts, tomb: tomb}
			if !tomb {
				a, err := as.Decode(x.agg)
				if err != nil {
					t.fail(err)
					return
				}
				r.value = a
			}
			fwd(r)
		}
		load := func(kb []byte) ([]session, bool) {
			v, ok, err := s.st.Get(kb)
			if err != nil {
				t.fail(err)
				return nil, false
			}
			if !ok {
				return nil, true
			}
			ss, err := decodeSessions(v)
			if err != nil {
				t.fail(fmt.Errorf("store %s: %w", store, err))
				return nil, false
			}
			return ss, true
		}
		save := func(kb []byte, ss []session) {
			var err error
			if len(ss) == 0 {
				err = s.st.Delete(kb)
			} else {
				err = s.st.Put(kb, encodeSessions(ss))
			}
			if err != nil {
				t.fail(err)
			}
		}
		// apply folds r into kb's sessions; false on a store failure. An
		// operator failure dead-letters r and leaves the sessions as they
		// were.
		apply := func(k K, kb []byte, ss []session, r rec) bool {
			var err error
			m := session{start: r.ts, end: r.ts}
			a := init()
			var keep, merged []session
			for _, x := range ss {
				if x.start-gap <= r.ts && r.ts <= x.end+gap {
					merged = append(merged, x)
					m.start, m.end = min(m.start, x.start), max(m.end, x.end)
					old, err := as.Decode(x.agg)
					if err != nil {
						t.fail(err)
						return false
					}
					if a, err = merge(k, a, old); err != nil {
						t.operatorFailed(n.name, err)
						return true
					}
				} else {
					keep = append(keep, x)
				}
			}
			if a, err = agg(k, as_[V](r.value), a); err != nil {
				t.operatorFailed(n.name, err)
				return true
			}
			if m.agg, err = as.Encode(a); err != nil {
				t.fail(err)
				return false
			}
			keep = append(keep, m)
			slices.SortFunc(keep, func(x, y session) int { return int(x.start - y.start) })
			save(kb, keep)
			heap.Push(h, winRef{end: m.end, start: m.start, key: string(kb)})
			if !final {
				for _, x := range merged {
					if x.start != m.start || x.end != m.end {
						out(k, x, true, r.ts)
					}
				}
				out(k, m, false, r.ts)
			}
			return true
		}
		return func(r rec) {
			if t.skip(s) {
				return
			}
			k, kb, ok := storeKey(t, ks, store, r)
			if !ok {
				return
			}
			st := t.streamTime
			if r.ts < st-grace {
				t.m.late.Add(1)
			} else if ss, ok := load(kb); ok && !apply(k, kb, ss, r) {
				return // a store failure (t.err)
			}
			for h.Len() > 0 && (*h)[0].end+gap+grace < st {
				w := heap.Pop(h).(winRef)
				ss, ok := load([]byte(w.key))
				if !ok {
					return
				}
				i := slices.IndexFunc(ss, func(x session) bool { return x.start == w.start && x.end == w.end })
				if i < 0 {
					continue // merged into a later session
				}
				if final {
					key, err := ks.Decode([]byte(w.key))
					if err != nil {
						t.fail(err)
						return
					}
					out(key, ss[i], false, w.end)
				}
				save([]byte(w.key), slices.Delete(ss, i, i+1))
			}
		}
	}
	return Stream[Windowed[K], A]{b: b, n: n, srcs: srcs}
}

type session struct {
	start, end int64
	agg        []byte
}

func encodeSessions(ss []session) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, x := range ss {
		b = binary.AppendVarint(b, x.start)
		b = binary.AppendVarint(b, x.end)
		b = binary.AppendUvarint(b, uint64(len(x.agg)))
		b = append(b, x.agg...)
	}
	return b
}

func decodeSessions(b []byte) ([]session, error) {
	bad := fmt.Errorf("malformed session list")
	n, m := binary.Uvarint(b)
	if m <= 0 || n > uint64(len(b)) {
		return nil, bad
	}
	b = b[m:]
	ss := make([]session, 0, n)
	for range n {
		var x session
		var l uint64
		if x.start, m = binary.Varint(b); m <= 0 {
			return nil, bad
		}
		b = b[m:]
		if x.end, m = binary.Varint(b); m <= 0 {
			return nil, bad
		}
		b = b[m:]
		if l, m = binary.Uvarint(b); m <= 0 || l > uint64(len(b)-m) {
			return nil, bad
		}
		x.agg = append([]byte(nil), b[m:m+int(l)]...)
		b = b[m+int(l):]
		ss = append(ss, x)
	}
	return ss, nil
}
