package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// PebbleOptions tunes a Pebble backend's memory. Zero fields take the
// defaults noted.
type PebbleOptions struct {
	// BlockCacheBytes is the sstable block cache (default 16 MiB).
	BlockCacheBytes int64
	// MemTableBytes is the size of one memtable (default 16 MiB); up to
	// two are in memory at a time (one being flushed).
	MemTableBytes uint64
}

// Pebble is a Backend on github.com/cockroachdb/pebble (an LSM tree, the
// Go analogue of the RocksDB stores Kafka Streams uses). The write-ahead log
// is off: the changelog topic is the store's durability, so a store that
// was not closed cleanly is wiped and restored (see the package doc).
type Pebble struct {
	db  *pebble.DB
	dir string
}

type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// OpenPebble opens (creating if needed) a Pebble backend in dir.
func OpenPebble(dir string, o PebbleOptions) (*Pebble, error) {
	if o.BlockCacheBytes <= 0 {
		o.BlockCacheBytes = 16 << 20
	}
	if o.MemTableBytes == 0 {
		o.MemTableBytes = 16 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store dir %s: %w", dir, err)
	}
	c := pebble.NewCache(o.BlockCacheBytes)
	defer c.Unref()
	opts := &pebble.Options{
		Cache:                       c,
		MemTableSize:                o.MemTableBytes,
		MemTableStopWritesThreshold: 4,
		DisableWAL:                  true,
		Logger:                      quietLogger{},
	}
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	opts.EnsureDefaults()
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", dir, err)
	}
	return &Pebble{db: db, dir: dir}, nil
}

// Get implements Backend.
func (p *Pebble) Get(k []byte) ([]byte, bool, error) {
	v, closer, err := p.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]byte, len(v))
	copy(out, v)
	closer.Close()
	return out, true, nil
}

// NewBatch implements Backend.
func (p *Pebble) NewBatch() Batch { return &pebbleBatch{b: p.db.NewBatch()} }

// Scan implements Backend.
func (p *Pebble) Scan(fn func(k, v []byte) error) error {
	it, err := p.db.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// SizeBytes implements Backend: sstables on disk plus memtables.
func (p *Pebble) SizeBytes() int64 {
	m := p.db.Metrics()
	return int64(m.DiskSpaceUsage()) + int64(m.MemTable.Size)
}

// Sync implements Backend: memtables are flushed to sstables, so a clean
// Close keeps everything without a WAL.
func (p *Pebble) Sync() error { return p.db.Flush() }

// Close implements Backend.
func (p *Pebble) Close() error { return p.db.Close() }

type pebbleBatch struct{ b *pebble.Batch }

func (b *pebbleBatch) Set(k, v []byte) { _ = b.b.Set(k, v, nil) }
func (b *pebbleBatch) Delete(k []byte) { _ = b.b.Delete(k, nil) }
func (b *pebbleBatch) Len() int        { return int(b.b.Count()) }
func (b *pebbleBatch) Discard()        { b.b.Close() }
func (b *pebbleBatch) Commit() error {
	err := b.b.Commit(pebble.NoSync)
	b.b.Close()
	return err
}
