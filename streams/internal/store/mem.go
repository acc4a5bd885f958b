package store

import (
	"slices"
	"strings"
)

// Mem is an in-memory Backend (the test driver's): a map plus a sort on
// Scan. Its zero value is not usable; call NewMem.
type Mem struct {
	m      map[string][]byte
	bytes  int64
	closed bool
}

// NewMem returns an empty in-memory backend.
func NewMem() *Mem { return &Mem{m: make(map[string][]byte)} }

// Get implements Backend.
func (m *Mem) Get(k []byte) ([]byte, bool, error) {
	if m.closed {
		return nil, false, ErrClosed
	}
	v, ok := m.m[string(k)]
	if !ok {
		return nil, false, nil
	}
	return slices.Clone(v), true, nil
}

// NewBatch implements Backend.
func (m *Mem) NewBatch() Batch { return &memBatch{m: m} }

// Scan implements Backend.
func (m *Mem) Scan(fn func(k, v []byte) error) error {
	if m.closed {
		return ErrClosed
	}
	keys := make([]string, 0, len(m.m))
	for k := range m.m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, strings.Compare)
	for _, k := range keys {
		if err := fn([]byte(k), m.m[k]); err != nil {
			return err
		}
	}
	return nil
}

// SizeBytes implements Backend.
func (m *Mem) SizeBytes() int64 { return m.bytes }

// Len returns the number of entries.
func (m *Mem) Len() int { return len(m.m) }

// Sync implements Backend.
func (m *Mem) Sync() error { return nil }

// Close implements Backend.
func (m *Mem) Close() error { m.closed = true; return nil }

type memOp struct {
	k, v []byte
	del  bool
}

type memBatch struct {
	m   *Mem
	ops []memOp
}

func (b *memBatch) Set(k, v []byte) {
	b.ops = append(b.ops, memOp{k: slices.Clone(k), v: slices.Clone(v)})
}
func (b *memBatch) Delete(k []byte) { b.ops = append(b.ops, memOp{k: slices.Clone(k), del: true}) }
func (b *memBatch) Len() int        { return len(b.ops) }
func (b *memBatch) Discard()        { b.ops = nil }

func (b *memBatch) Commit() error {
	if b.m.closed {
		return ErrClosed
	}
	for _, op := range b.ops {
		old, had := b.m.m[string(op.k)]
		if had {
			b.m.bytes -= int64(len(op.k) + len(old))
		}
		if op.del {
			delete(b.m.m, string(op.k))
			continue
		}
		if op.v == nil {
			op.v = []byte{}
		}
		b.m.m[string(op.k)] = op.v
		b.m.bytes += int64(len(op.k) + len(op.v))
	}
	b.ops = nil
	return nil
}
