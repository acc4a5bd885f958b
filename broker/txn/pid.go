package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path"
	"sync"

	"weir/broker/log/vfs"
)

// BlockStore reserves blocks of producer ids durably.
//
// Contract: Reserve returns the first id of size ids that no earlier
// Reserve returned (on this or any earlier run over the same storage), and
// only after that reservation is durable. It is safe for concurrent use.
// FileBlockStore implements it for a single node; the controller will
// implement it over its quorum (Kafka's AllocateProducerIds).
type BlockStore interface {
	Reserve(size int64) (first int64, err error)
}

// ErrProducerIDsExhausted: every producer id up to MaxInt64 is used.
var ErrProducerIDsExhausted = errors.New("producer ids exhausted")

// ProducerIDsFile is the FileBlockStore's file name in the data directory.
const ProducerIDsFile = "__weir_producer_ids"

// FileBlockStore keeps the next unreserved producer id in a small file:
//
//	+----------------+------------+
//	| next id i64 BE | crc32c u32 |
//	+----------------+------------+
//
// written with write-temp, fsync, rename, fsync-directory. A damaged file is
// an error, never a reset to 0 (which would reuse ids).
type FileBlockStore struct {
	fsys vfs.FS
	dir  string
	mu   sync.Mutex
	next int64
}

// OpenFileBlockStore opens (or starts) the store in dir.
func OpenFileBlockStore(fsys vfs.FS, dir string) (*FileBlockStore, error) {
	s := &FileBlockStore{fsys: fsys, dir: dir}
	name := path.Join(dir, ProducerIDsFile)
	data, err := vfs.ReadFile(fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("txn: reading %s: %w", name, err)
	case len(data) != 12 || crc32.Checksum(data[:8], castagnoli) != binary.BigEndian.Uint32(data[8:]):
		return nil, fmt.Errorf("txn: %s is damaged (%d bytes or bad crc); refusing to reuse producer ids: restore it or set it past the highest id in use", name, len(data))
	}
	s.next = int64(binary.BigEndian.Uint64(data[:8]))
	if s.next < 0 {
		return nil, fmt.Errorf("txn: %s holds negative next id %d", name, s.next)
	}
	return s, nil
}

// Reserve implements BlockStore.
func (s *FileBlockStore) Reserve(size int64) (int64, error) {
	if size <= 0 {
		return 0, fmt.Errorf("txn: reserve %d producer ids: size must be positive", size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next > math.MaxInt64-size {
		return 0, ErrProducerIDsExhausted
	}
	first, next := s.next, s.next+size
	b := binary.BigEndian.AppendUint64(nil, uint64(next))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if err := vfs.WriteFileAtomic(s.fsys, s.dir, path.Join(s.dir, ProducerIDsFile), b, true); err != nil {
		return 0, fmt.Errorf("txn: reserving producer ids %d..%d: %w", first, next-1, err)
	}
	s.next = next
	return first, nil
}

// DefaultBlockSize is how many ids the Allocator reserves at a time
// (Kafka's producer id block size).
const DefaultBlockSize = 1000

// Allocator hands out producer ids for InitProducerId: increasing, never
// reused, reserved from a BlockStore a block at a time (ids left in a block
// at shutdown are skipped). Safe for concurrent use.
type Allocator struct {
	store BlockStore
	block int64

	mu          sync.Mutex
	next, limit int64
}

// NewAllocator returns an allocator over store reserving blockSize ids at
// a time (DefaultBlockSize if <= 0).
func NewAllocator(store BlockStore, blockSize int64) *Allocator {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &Allocator{store: store, block: blockSize}
}

// Next returns a new producer id.
func (a *Allocator) Next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.limit {
		first, err := a.store.Reserve(a.block)
		if err != nil {
			return 0, err
		}
		a.next, a.limit = first, first+a.block
	}
	id := a.next
	a.next++
	return id, nil
}
