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

// entry is one cached key. val is nil for a cached deletion.
type entry struct {
	key   string
	val   []byte
	dirty bool
	del   bool
}

// entryOverhead approximates the heap cost of one cached entry beyond its
// key and value bytes (map bucket slot, entry struct, string header).
const entryOverhead = 96

// Store is a write cache over a Backend. It is not safe for concurrent use:
// each store belongs to one task, driven by one goroutine.
type Store struct {
	name    string
	b       Backend
	cache   map[string]*entry
	dirty   []*entry
	bytes   int
	max     int
	closed  bool
	flushes int64

	// OnFlush, if set, is called for each dirty entry during Flush, in the
	// order the entries became dirty, before they are written to the
	// Backend. v is nil for a deletion. k and v stay valid and unchanged
	// after the call (the store never mutates a value it was given), so the
	// hook may keep them, e.g. in a produced record.
	OnFlush func(k, v []byte) error
}

// New returns a store named name over b whose cache holds about maxBytes
// of keys and values (at least one entry).
func New(name string, b Backend, maxBytes int) *Store {
	return &Store{name: name, b: b, cache: make(map[string]*entry), max: maxBytes}
}

// Name returns the store's name.
func (s *Store) Name() string { return s.name }

// Backend returns the store's backend.
func (s *Store) Backend() Backend { return s.b }

// Get returns the value of k. The returned slice must not be modified.
func (s *Store) Get(k []byte) ([]byte, bool, error) {
	if s.closed {
		return nil, false, fmt.Errorf("store %s: %w", s.name, ErrClosed)
	}
	if e, ok := s.cache[string(k)]; ok {
		return e.val, !e.del, nil
	}
	v, ok, err := s.b.Get(k)
	if err != nil {
		return nil, false, fmt.Errorf("store %s: get: %w", s.name, err)
	}
	if ok {
		e := &entry{key: string(k), val: v}
		s.cache[e.key] = e
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
	e, ok := s.cache[string(k)]
	if !ok {
		e = &entry{key: string(k)}
		s.cache[e.key] = e
		s.bytes += len(e.key) + entryOverhead
	}
	s.bytes += len(v) - len(e.val)
	e.val, e.del = v, del
	if !e.dirty {
		e.dirty = true
		s.dirty = append(s.dirty, e)
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
	clear(s.cache)
	s.bytes = 0
	return nil
}

// Dirty returns how many entries the next Flush writes.
func (s *Store) Dirty() int { return len(s.dirty) }

// CachedBytes returns the approximate cache footprint.
func (s *Store) CachedBytes() int { return s.bytes }

// Flushes returns how many non-empty flushes the store has done.
func (s *Store) Flushes() int64 { return s.flushes }

// Flush writes every dirty entry through OnFlush and to the Backend.
func (s *Store) Flush() error {
	if s.closed {
		return fmt.Errorf("store %s: %w", s.name, ErrClosed)
	}
	if len(s.dirty) == 0 {
		return nil
	}
	s.flushes++
	batch := s.b.NewBatch()
	for i, e := range s.dirty {
		k := []byte(e.key)
		if s.OnFlush != nil {
			if err := s.OnFlush(k, e.val); err != nil {
				batch.Discard()
				// Entries not yet handed to the hook stay dirty.
				s.dirty = s.dirty[i:]
				return fmt.Errorf("store %s: flush: %w", s.name, err)
			}
		}
		if e.del {
			batch.Delete(k)
		} else {
			batch.Set(k, e.val)
		}
		e.dirty = false
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	n := batch.Len()
	if err := batch.Commit(); err != nil {
		return fmt.Errorf("store %s: writing %d entries: %w", s.name, n, err)
	}
	return nil
}

// Scan flushes the cache and visits every entry in key order.
func (s *Store) Scan(fn func(k, v []byte) error) error {
	if err := s.Flush(); err != nil {
		return err
	}
	return s.b.Scan(fn)
}

// SizeBytes returns the backend's size plus the cache's.
func (s *Store) SizeBytes() int64 { return s.b.SizeBytes() + int64(s.bytes) }

// Close closes the backend without flushing: dirty entries are lost (the
// caller flushes first when it wants them). The store is unusable after.
func (s *Store) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cache, s.dirty = nil, nil
	return s.b.Close()
}
