package streams

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"time"
)

// TimeWindows are fixed-size windows over event time (record timestamps,
// or what the source's EventTime extractor gives):
// tumbling when Advance is 0 or equal to Size, hopping when smaller.
// Window starts are multiples of Advance since the Unix epoch; a window
// [start, start+Size) holds the records whose timestamp falls in it.
//
// Stream time is the largest record timestamp the task has seen. A window
// closes when stream time reaches end + Grace; a record arriving for a
// closed window is late: it is dropped from that window and counted in the
// task's LateDropped metric (once per window it missed), never merged.
//
// With EmitFinal, a window's result is emitted once, when it closes (the
// first record that moves stream time past end + Grace triggers it).
// Otherwise every update is emitted as it happens. Closed windows are
// deleted from the store either way.
type TimeWindows struct {
	Size, Advance, Grace time.Duration
	EmitFinal            bool
}

// SessionWindows group a key's records into sessions separated by more
// than Gap of inactivity. A session [first, last] closes when stream time
// passes last + Gap + Grace; a record older than stream time - Grace is
// late (dropped and counted). These rules make a closed session final: no
// record that is not late can reach it. With EmitFinal a session is
// emitted once, when it closes; otherwise each change is emitted, and a
// session merged into another is emitted as a deletion (null value).
type SessionWindows struct {
	Gap, Grace time.Duration
	EmitFinal  bool
}

// Windowed is a key in a window [Start, End).
type Windowed[K any] struct {
	Key        K
	Start, End time.Time
}

// WindowedKey encodes Windowed[K] keys as the inner key's bytes followed by
// the start and end in milliseconds (8 bytes big-endian each).
func WindowedKey[K any](inner Serde[K]) Serde[Windowed[K]] {
	return SerdeFuncs[Windowed[K]]{
		Enc: func(w Windowed[K]) ([]byte, error) {
			b, err := inner.Encode(w.Key)
			if err != nil {
				return nil, err
			}
			out := make([]byte, 0, len(b)+16)
			out = append(out, b...)
			out = binary.BigEndian.AppendUint64(out, uint64(w.Start.UnixMilli()))
			return binary.BigEndian.AppendUint64(out, uint64(w.End.UnixMilli())), nil
		},
		Dec: func(b []byte) (Windowed[K], error) {
			if len(b) < 16 {
				return Windowed[K]{}, fmt.Errorf("%w: windowed key shorter than 16 bytes", ErrDecode)
			}
			k, err := inner.Decode(b[:len(b)-16])
			if err != nil {
				return Windowed[K]{}, err
			}
			s := int64(binary.BigEndian.Uint64(b[len(b)-16:]))
			e := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
			return Windowed[K]{Key: k, Start: time.UnixMilli(s), End: time.UnixMilli(e)}, nil
		},
	}
}

// WindowedGrouped is a grouped stream cut into time windows.
type WindowedGrouped[K, V any] struct {
	g Grouped[K, V]
	w TimeWindows
}

// WindowedBy cuts g into w.
func WindowedBy[K, V any](g Grouped[K, V], w TimeWindows) WindowedGrouped[K, V] {
	if w.Advance == 0 {
		w.Advance = w.Size
	}
	if w.Size < time.Millisecond || w.Advance < time.Millisecond || w.Advance > w.Size || w.Grace < 0 {
		g.s.b.errorf("WindowedBy: want Size >= 1ms, 0 < Advance <= Size, Grace >= 0; got %+v", w)
	}
	return WindowedGrouped[K, V]{g: g, w: w}
}

// CountWindowed counts records per key and window.
func CountWindowed[K, V any](wg WindowedGrouped[K, V], store string) Stream[Windowed[K], int64] {
	return AggregateWindowed(wg, store, func() int64 { return 0 }, func(_ K, _ V, n int64) int64 { return n + 1 }, Int64())
}

// AggregateWindowed folds each key's values per window, starting from
// init().
func AggregateWindowed[K, V, A any](wg WindowedGrouped[K, V], store string, init func() A, agg func(K, V, A) A, as Serde[A]) Stream[Windowed[K], A] {
	return aggregateWindowed(wg, store, "WINDOW-AGGREGATE-", init, func(k K, v V, a A) (A, error) { return agg(k, v, a), nil }, as)
}

// TryAggregateWindowed is AggregateWindowed with an aggregator that can
// fail: the record then goes to the dead-letter topic (try.go) and none
// of its windows changes (with hopping windows, not even those it was
// folded into before the failure).
func TryAggregateWindowed[K, V, A any](wg WindowedGrouped[K, V], store string, init func() A, agg func(K, V, A) (A, error), as Serde[A]) Stream[Windowed[K], A] {
	return aggregateWindowed(wg, store, "TRY-WINDOW-AGGREGATE-", init, agg, as)
}

func aggregateWindowed[K, V, A any](wg WindowedGrouped[K, V], store, op string, init func() A, agg func(K, V, A) (A, error), as Serde[A]) Stream[Windowed[K], A] {
	b := wg.g.s.b
	in, srcs, spec := wg.g.input(store, kindWindow)
	n := b.add(op+store, []*node{in}, nil)
	spec.id = n.id
	n.store = spec
	size, adv, grace := wg.w.Size.Milliseconds(), wg.w.Advance.Milliseconds(), wg.w.Grace.Milliseconds()
	final := wg.w.EmitFinal
	ks := wg.g.ks
	n.make = func(t *task, fwd func(rec)) func(rec) {
		s := t.attachStore(spec)
		h := &winHeap{}
		var ups []winUpdate[A] // scratch: one record's window updates
		s.onOpen = func() error {
			return s.st.Scan(func(k, _ []byte) error {
				kb, start, err := splitWinKey(k)
				if err != nil {
					return err
				}
				heap.Push(h, winRef{end: start + size, start: start, key: string(kb)})
				return nil
			})
		}
		emit := func(kb []byte, start int64, v []byte, ts int64) {
			key, err := ks.Decode(kb)
			if err != nil {
				t.fail(err)
				return
			}
			a, err := as.Decode(v)
			if err != nil {
				t.fail(err)
				return
			}
			fwd(rec{key: Windowed[K]{Key: key, Start: time.UnixMilli(start), End: time.UnixMilli(start + size)}, value: a, ts: ts})
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
			start := max(0, r.ts-size+adv) / adv * adv
			// Fold the record into each of its open windows, then write
			// them all (none if the aggregator fails on one).
			ups = ups[:0]
			for ; start <= r.ts; start += adv {
				end := start + size
				if end+grace <= st {
					t.m.late.Add(1)
					continue
				}
				wk := winKey(kb, start)
				old, ok, err := s.st.Get(wk)
				if err != nil {
					t.fail(err)
					return
				}
				var a A
				if ok {
					if a, err = as.Decode(old); err != nil {
						t.fail(err)
						return
					}
				} else {
					a = init()
				}
				if a, err = agg(k, as_[V](r.value), a); err != nil {
					t.operatorFailed(n.name, err)
					ups = ups[:0] // no window changes; closing goes on
					break
				}
				nb, err := as.Encode(a)
				if err != nil {
					t.fail(err)
					return
				}
				ups = append(ups, winUpdate[A]{key: wk, val: nb, start: start, isNew: !ok, agg: a})
			}
			for _, u := range ups {
				if u.isNew {
					heap.Push(h, winRef{end: u.start + size, start: u.start, key: string(kb)})
				}
				if err := s.st.Put(u.key, u.val); err != nil {
					t.fail(err)
					return
				}
				if !final {
					fwd(rec{key: Windowed[K]{Key: k, Start: time.UnixMilli(u.start), End: time.UnixMilli(u.start + size)}, value: u.agg, ts: r.ts, headers: r.headers})
				}
			}
			clear(ups)
			for h.Len() > 0 && (*h)[0].end+grace <= st {
				w := heap.Pop(h).(winRef)
				wk := winKey([]byte(w.key), w.start)
				v, ok, err := s.st.Get(wk)
				if err != nil {
					t.fail(err)
					return
				}
				if !ok {
					continue
				}
				if final {
					emit([]byte(w.key), w.start, v, w.end-1)
				}
				if err := s.st.Delete(wk); err != nil {
					t.fail(err)
					return
				}
			}
		}
	}
	return Stream[Windowed[K], A]{b: b, n: n, srcs: srcs}
}

// winUpdate is a window's new aggregate, waiting to be written.
type winUpdate[A any] struct {
	key, val []byte
	start    int64
	isNew    bool
	agg      A
}

// winKey is a window store key: uvarint length of the key, the key, the
// window start (8 bytes big-endian).
func winKey(kb []byte, start int64) []byte {
	out := make([]byte, 0, len(kb)+binary.MaxVarintLen64+8)
	out = binary.AppendUvarint(out, uint64(len(kb)))
	out = append(out, kb...)
	return binary.BigEndian.AppendUint64(out, uint64(start))
}

func splitWinKey(b []byte) (kb []byte, start int64, err error) {
	n, m := binary.Uvarint(b)
	if m <= 0 || uint64(len(b)-m) != n+8 {
		return nil, 0, fmt.Errorf("malformed window store key %x", b)
	}
	return b[m : m+int(n)], int64(binary.BigEndian.Uint64(b[m+int(n):])), nil
}

// winRef is an open window (or session) waiting to close, ordered by end.
type winRef struct {
	end, start int64
	key        string
}

type winHeap []winRef

func (h winHeap) Len() int { return len(h) }
func (h winHeap) Less(i, j int) bool {
	if h[i].end != h[j].end {
		return h[i].end < h[j].end
	}
	if h[i].start != h[j].start {
		return h[i].start < h[j].start
	}
	return h[i].key < h[j].key
}
func (h winHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *winHeap) Push(x any)   { *h = append(*h, x.(winRef)) }
func (h *winHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
