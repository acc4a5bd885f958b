package metadata

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
)

// FileName is the metadata file inside a broker's data directory.
const FileName = "__weir_metadata.log"

const (
	frameHeader    = 8       // length u32 + crc32c u32
	maxRecordBytes = 1 << 26 // a record larger than 64 MiB is corruption
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileStore is the single-node Store: records are appended to one file,
// fsynced, and applied. Safe for concurrent use.
type FileStore struct {
	path string
	log  *zap.Logger

	mu       sync.Mutex // serializes writes and watcher registration
	f        *os.File
	size     int64 // bytes of whole, synced frames: where the next frame goes
	failed   error // set when the file's state is unknown; every write fails until a reopen
	closed   bool
	watchers []func(Change)
	img      atomic.Pointer[Image]
}

// OpenFile opens (or creates) the metadata file in dataDir, replays it, and
// returns the store. A torn or corrupt tail is truncated with a warning.
// When the file holds more than twice the records of a snapshot of the
// replayed image, it is rewritten as that snapshot.
func OpenFile(dataDir string, logger *zap.Logger) (*FileStore, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, fmt.Errorf("metadata: data dir %s: %w", dataDir, err)
	}
	path := filepath.Join(dataDir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metadata: open %s: %w", path, err)
	}
	img, n, good, err := replay(f, logger, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("metadata: stat %s: %w", path, err)
	}
	if good < st.Size() {
		logger.Warn("metadata file has a torn or corrupt tail; truncating",
			zap.String("file", path), zap.Int64("valid_bytes", good), zap.Int64("file_bytes", st.Size()))
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("metadata: truncate %s: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("metadata: sync %s: %w", path, err)
		}
	}
	if snap := img.Records(); n > 2*len(snap)+16 {
		f.Close()
		if err := writeSnapshot(path, snap); err != nil {
			return nil, err
		}
		if f, err = os.OpenFile(path, os.O_RDWR, 0o644); err != nil {
			return nil, fmt.Errorf("metadata: reopen %s: %w", path, err)
		}
		logger.Info("metadata file compacted", zap.String("file", path), zap.Int("records_before", n), zap.Int("records_after", len(snap)))
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("metadata: seek %s: %w", path, err)
	}
	s := &FileStore{path: path, log: logger, f: f, size: size}
	s.img.Store(img)
	return s, nil
}

// replay applies every valid frame of f; it returns the image, the number of
// records, and the byte length of the valid prefix.
func replay(f *os.File, logger *zap.Logger, path string) (*Image, int, int64, error) {
	img := &Image{}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("metadata: read %s: %w", path, err)
	}
	var off int64
	n := 0
	for {
		payload, size, ok := nextFrame(data[off:])
		if !ok {
			break
		}
		r, err := decodeRecord(payload)
		if err != nil {
			logger.Warn("metadata record undecodable; treating the rest as a torn tail", zap.String("file", path), zap.Int64("offset", off), zap.Error(err))
			break
		}
		next, err := img.Apply(r)
		if err != nil {
			// A record that applied once applies again: this is a real
			// inconsistency, not a torn write. Refuse to start.
			return nil, 0, 0, fmt.Errorf("metadata: %s at byte %d: replaying %s: %w", path, off, r.Type, err)
		}
		img = next
		off += size
		n++
	}
	return img, n, off, nil
}

// nextFrame returns the payload and total size of the frame at the start of
// b, ok=false if b holds no complete, CRC-valid frame.
func nextFrame(b []byte) ([]byte, int64, bool) {
	if len(b) < frameHeader {
		return nil, 0, false
	}
	l := binary.BigEndian.Uint32(b)
	if l > maxRecordBytes || int64(len(b)-frameHeader) < int64(l) {
		return nil, 0, false
	}
	payload := b[frameHeader : frameHeader+int(l)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, false
	}
	return payload, int64(frameHeader) + int64(l), true
}

func appendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// writeSnapshot replaces path with a file holding recs: temp file, fsync,
// rename, fsync of the directory.
func writeSnapshot(path string, recs []Record) error {
	var buf []byte
	for _, r := range recs {
		p, err := encodeRecord(r)
		if err != nil {
			return err
		}
		buf = appendFrame(buf, p)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("metadata: snapshot %s: %w", tmp, err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("metadata: snapshot %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("metadata: snapshot %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("metadata: snapshot %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("metadata: snapshot rename to %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Image returns the current image.
func (s *FileStore) Image() *Image { return s.img.Load() }

// Watch registers fn; see Store.
func (s *FileStore) Watch(fn func(Change)) {
	s.mu.Lock()
	s.watchers = append(s.watchers, fn)
	s.mu.Unlock()
}

// Propose makes r durable and applies it. It is the single write path; the
// typed methods build records and call it.
func (s *FileStore) Propose(ctx context.Context, r Record) (*Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proposeLocked(ctx, r)
}

func (s *FileStore) proposeLocked(ctx context.Context, r Record) (*Image, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if s.failed != nil {
		return nil, s.failed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	before := s.img.Load()
	after, err := before.Apply(r)
	if err != nil {
		return nil, err
	}
	payload, err := encodeRecord(r)
	if err != nil {
		return nil, err
	}
	frame := appendFrame(nil, payload)
	if _, err := s.f.WriteAt(frame, s.size); err != nil {
		// A short write (a full disk) leaves part of the frame. Replay stops
		// at the first bad frame, so a record written after it would be
		// lost at the next open: cut it off, or refuse every later write.
		if terr := s.f.Truncate(s.size); terr != nil {
			s.failed = fmt.Errorf("metadata: %s holds part of a record that could not be cut off (%v); restart the broker to recover it: %w", s.path, terr, err)
			s.log.Error("metadata file in an unknown state", zap.Error(s.failed))
		}
		return nil, fmt.Errorf("metadata: append to %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		// After a failed fsync the record may or may not be on disk, and a
		// later successful fsync proves nothing about it (the kernel may
		// have dropped the pages): stop writing, as for a partition log.
		s.failed = fmt.Errorf("metadata: sync %s failed; restart the broker to recover the file: %w", s.path, err)
		s.log.Error("metadata file in an unknown state", zap.Error(s.failed))
		return nil, s.failed
	}
	s.size += int64(len(frame))
	s.img.Store(after)
	for _, w := range s.watchers {
		w(Change{Record: r, Before: before, After: after})
	}
	return after, nil
}

// InitCluster sets the cluster id if none is set yet and returns the
// cluster id in effect.
func (s *FileStore) InitCluster(ctx context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.img.Load().ClusterID(); cur != "" {
		return cur, nil
	}
	img, err := s.proposeLocked(ctx, Record{Type: TypeInitCluster, InitCluster: &InitCluster{ClusterID: id}})
	if err != nil {
		return "", err
	}
	return img.ClusterID(), nil
}

// RegisterBroker records b unless the same registration is already there.
func (s *FileStore) RegisterBroker(ctx context.Context, b Broker) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.img.Load().Broker(b.NodeID); ok && SameRegistration(cur, b) {
		return nil
	}
	_, err := s.proposeLocked(ctx, Record{Type: TypeRegisterBroker, RegisterBroker: &b})
	return err
}

// SameRegistration reports whether a and b are the same registration
// (address, rack, fencing and storage state, per directory too).
func SameRegistration(a, b Broker) bool {
	return a.NodeID == b.NodeID && a.Host == b.Host && a.Port == b.Port && eqRack(a.Rack, b.Rack) && a.Fenced == b.Fenced && a.Storage == b.Storage &&
		slices.Equal(a.Endpoints, b.Endpoints) && eqLogDirs(a.Dirs, b.Dirs)
}

func eqRack(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// CreateTopic creates a topic; see Store.
func (s *FileStore) CreateTopic(ctx context.Context, spec TopicSpec) (*Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := BuildCreateTopic(s.img.Load(), spec)
	if err != nil {
		return nil, err
	}
	if spec.ValidateOnly {
		ct := r.CreateTopic
		return &Topic{Name: ct.Name, ID: ct.ID, Partitions: ct.Partitions, Configs: ct.Configs}, nil
	}
	img, err := s.proposeLocked(ctx, r)
	if err != nil {
		return nil, err
	}
	t, _ := img.Topic(spec.Name)
	return t, nil
}

// DeleteTopic deletes a topic and returns it as it was; see Store.
func (s *FileStore) DeleteTopic(ctx context.Context, name string) (*Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.img.Load().Topic(name)
	if !ok {
		return nil, fmt.Errorf("topic %q: %w", name, ErrUnknownTopic)
	}
	if _, err := s.proposeLocked(ctx, Record{Type: TypeDeleteTopic, DeleteTopic: &DeleteTopic{Name: name, ID: t.ID}}); err != nil {
		return nil, err
	}
	return t, nil
}

// CreatePartitions grows a topic to total partitions; see Store.
func (s *FileStore) CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32) (*Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := BuildCreatePartitions(s.img.Load(), name, total, assignment)
	if err != nil {
		return nil, err
	}
	img, err := s.proposeLocked(ctx, r)
	if err != nil {
		return nil, err
	}
	t, _ := img.Topic(name)
	return t, nil
}

// AlterTopicConfig replaces a topic's config overrides; see Store.
func (s *FileStore) AlterTopicConfig(ctx context.Context, name string, configs map[string]string) (*Topic, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, err := s.proposeLocked(ctx, Record{Type: TypeAlterTopicConfig, AlterTopicConfig: &AlterTopicConfig{Name: name, Configs: cloneConfigs(configs)}})
	if err != nil {
		return nil, err
	}
	t, _ := img.Topic(name)
	return t, nil
}

// AlterPartition changes a partition's ISR; see PartitionAlterer.
func (s *FileStore) AlterPartition(ctx context.Context, req AlterPartition) (Partition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := BuildAlterPartition(s.img.Load(), req)
	if err != nil {
		return Partition{}, err
	}
	img, err := s.proposeLocked(ctx, r)
	if err != nil {
		return Partition{}, err
	}
	p, _ := img.Partition(req.Topic, req.Partition)
	return p, nil
}

// Close closes the file. Later writes fail with ErrClosed; Image keeps
// working.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.f.Close()
}

var (
	_ Store            = (*FileStore)(nil)
	_ PartitionAlterer = (*FileStore)(nil)
)

// ElectLeaders runs leader elections; see LeaderElector. On one node
// every replica is this broker, so elections are rarely needed.
func (s *FileStore) ElectLeaders(ctx context.Context, req ElectLeaders) ([]ElectionResult, error) {
	return proposeDecided(ctx, s, func(im *Image) ([]Record, []ElectionResult) { return BuildElectLeaders(im, req) })
}

var _ LeaderElector = (*FileStore)(nil)

// AlterPartitionReassignments decides and applies reassignments; see
// Reassigner. Unclean election (cancelling a reassignment whose ISR is
// all adding replicas) is not allowed on one node.
func (s *FileStore) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment) ([]ReassignResult, error) {
	return proposeDecided(ctx, s, func(im *Image) ([]Record, []ReassignResult) { return BuildReassignments(im, reqs, nil) })
}

var _ Reassigner = (*FileStore)(nil)

// proposeDecided decides a per-partition request against the image
// (decide: BuildElectLeaders, BuildReassignments) and writes its records,
// under the store's lock, and returns the results.
func proposeDecided[R any](ctx context.Context, s *FileStore, decide func(*Image) ([]Record, []R)) ([]R, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, results := decide(s.img.Load())
	for _, r := range recs {
		if _, err := s.proposeLocked(ctx, r); err != nil {
			return nil, err
		}
	}
	return results, nil
}
