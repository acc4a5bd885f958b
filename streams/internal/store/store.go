package store

import (
	"errors"
	"fmt"
)

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("store closed")

// Backend is the durable layer under a Store's cache.
//
// Contract: Get returns a copy the caller owns, or ok=false when the key is
// absent. Batches apply atomically on Commit; the slices given to Set are
// copied (the caller may reuse them after Set returns). Scan visits every
// entry in key order; k and v are only valid during the call. Sync makes
// everything committed so far survive a clean Close (it need not survive a
// crash). Backends are used from one goroutine at a time.
type Backend interface {
	Get(k []byte) (v []byte, ok bool, err error)
	NewBatch() Batch
	Scan(fn func(k, v []byte) error) error
	SizeBytes() int64
	Sync() error
	Close() error
}

// Batch is a set of writes applied atomically by Commit. After Commit or
// Discard the batch must not be used.
type Batch interface {
	Set(k, v []byte)
	Delete(k []byte)
	Len() int
	Commit() error
	Discard()
}

// entry is one cached key. val is nil for a cached deletion. dirty: changed
// since the last Flush (OnFlush has not seen this value); stale: changed
// since the last write-back (the Backend has not).
type entry struct {
	key   string
	val   []byte
	dirty bool
	stale bool
	del   bool
}

// entryOverhead approximates the heap cost of one cached entry beyond its
// key and value bytes (map bucket slot, entry struct, string header).
const entryOverhead = 96

// Store is a write cache over a Backend. It is not safe for concurrent use:
// each store belongs to one task, driven by one goroutine.
type Store struct {
	name  string
	b     Backend
	cache map[string]*entry
	dirty []*entry
	stale []*entry
	// last is the entry the last Get found or loaded: a Put of the same
	// key right after (read-modify-write, as aggregations do) skips the
	// second map lookup.
	last    *entry
	bytes   int
	max     int
	closed  bool
	flushes int64

	// OnFlush, if set, is called for each dirty entry during Flush, in the
	// order the entries became dirty. v is nil for a deletion. k and v
	// stay valid and unchanged after the call (the store never mutates a
	// value it was given), so the hook may keep them, e.g. in a produced
	// record.
	OnFlush func(k, v []byte) error
}

// New returns a store named name over b whose cache holds about maxBytes
// of keys and values (at least one entry).
func New(name string, b Backend, maxBytes int) *Store {
	return &Store{name: name, b: b, cache: make(map[string]*entry), max: maxBytes}
}

// Name returns the store's name.
func (s *Store) Name() string { return s.name }

// Backend returns the store's backend. It lags the cache until Sync.
func (s *Store) Backend() Backend { return s.b }

// Get returns the value of k. The returned slice must not be modified.
func (s *Store) Get(k []byte) ([]byte, bool, error) {
	if s.closed {
		return nil, false, fmt.Errorf("store %s: %w", s.name, ErrClosed)
	}
	if e, ok := s.cache[string(k)]; ok {
		s.last = e
		return e.val, !e.del, nil
	}
	v, ok, err := s.b.Get(k)
	if err != nil {
		return nil, false, fmt.Errorf("store %s: get: %w", s.name, err)
	}
	if ok {
		e := &entry{key: string(k), val: v}
		s.cache[e.key] = e
		s.last = e
		s.bytes += len(e.key) + len(v) + entryOverhead
		if err := s.maybeEvict(); err != nil {
			return nil, false, err
		}
	}
	return v, ok, nil
}

// Put sets k to v. The store keeps v: the caller must not modify it later.
func (s *Store) Put(k, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	return s.set(k, v, false)
}

// Delete removes k.
func (s *Store) Delete(k []byte) error { return s.set(k, nil, true) }

func (s *Store) set(k, v []byte, del bool) error {
	if s.closed {
		return fmt.Errorf("store %s: %w", s.name, ErrClosed)
	}
	e := s.last
	if e == nil || e.key != string(k) {
		var ok bool
		if e, ok = s.cache[string(k)]; !ok {
			e = &entry{key: string(k)}
			s.cache[e.key] = e
			s.bytes += len(e.key) + entryOverhead
		}
	}
	s.bytes += len(v) - len(e.val)
	e.val, e.del = v, del
	if !e.dirty {
		e.dirty = true
		s.dirty = append(s.dirty, e)
	}
	if !e.stale {
		e.stale = true
		s.stale = append(s.stale, e)
	}
	return s.maybeEvict()
}

// MarkDirty makes k's current value (or its absence) part of the next
// Flush, as if it had just been written. Restore uses it to rewrite keys an
// incomplete flush left in the changelog.
func (s *Store) MarkDirty(k []byte) error {
	v, ok, err := s.Get(k)
	if err != nil {
		return err
	}
	if !ok {
		return s.Delete(k)
	}
	return s.set(k, v, false)
}

func (s *Store) maybeEvict() error {
	if s.bytes <= s.max {
		return nil
	}
	if err := s.Flush(); err != nil {
		return err
	}
	if err := s.writeBack(); err != nil {
		return err
	}
	clear(s.cache)
	s.last = nil
	s.bytes = 0
	return nil
}

// writeBack writes every stale entry to the Backend in one batch.
func (s *Store) writeBack() error {
	if len(s.stale) == 0 {
		return nil
	}
	batch := s.b.NewBatch()
	for _, e := range s.stale {
		if e.del {
			batch.Delete([]byte(e.key))
		} else {
			batch.Set([]byte(e.key), e.val)
		}
	}
	n := batch.Len()
	if err := batch.Commit(); err != nil {
		return fmt.Errorf("store %s: writing %d entries: %w", s.name, n, err)
	}
	for _, e := range s.stale {
		e.stale = false
	}
	clear(s.stale)
	s.stale = s.stale[:0]
	return nil
}

// Dirty returns how many entries the next Flush writes.
func (s *Store) Dirty() int { return len(s.dirty) }

// CachedBytes returns the approximate cache footprint.
func (s *Store) CachedBytes() int { return s.bytes }

// Flushes returns how many non-empty flushes the store has done.
func (s *Store) Flushes() int64 { return s.flushes }

// Flush hands every dirty entry to OnFlush (the Backend is written later;
// see the package doc).
func (s *Store) Flush() error {
	if s.closed {
		return fmt.Errorf("store %s: %w", s.name, ErrClosed)
	}
	if len(s.dirty) == 0 {
		return nil
	}
	s.flushes++
	for i, e := range s.dirty {
		if s.OnFlush != nil {
			if err := s.OnFlush([]byte(e.key), e.val); err != nil {
				// Entries not yet handed to the hook stay dirty.
				clear(s.dirty[:i])
				s.dirty = s.dirty[i:]
				return fmt.Errorf("store %s: flush: %w", s.name, err)
			}
		}
		e.dirty = false
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	return nil
}

// Sync writes every entry changed since the last write-back to the
// Backend and syncs it, so the Backend alone holds the store's current
// contents (a clean close calls it right after Flush).
func (s *Store) Sync() error {
	if s.closed {
		return fmt.Errorf("store %s: %w", s.name, ErrClosed)
	}
	if err := s.writeBack(); err != nil {
		return err
	}
	return s.b.Sync()
}

// Scan flushes the cache, writes it back and visits every entry in key
// order.
func (s *Store) Scan(fn func(k, v []byte) error) error {
	if err := s.Flush(); err != nil {
		return err
	}
	if err := s.writeBack(); err != nil {
		return err
	}
	return s.b.Scan(fn)
}

// SizeBytes returns the backend's size plus the cache's.
func (s *Store) SizeBytes() int64 { return s.b.SizeBytes() + int64(s.bytes) }

// Close closes the backend without flushing or writing back: changes not
// yet written back are lost (the caller calls Flush and Sync first when it
// wants them). The store is unusable after.
func (s *Store) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cache, s.dirty, s.stale, s.last = nil, nil, nil, nil
	return s.b.Close()
}
