package log

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Dir returns the partition's directory name "<topic>-<partition>".
func (tp TopicPartition) Dir() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// ParsePartitionDir splits "<topic>-<partition>" at the last '-'.
func ParsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Logger                 *zap.Logger
	MaxOpenFiles           int           // FileCache size (default 1000)
	RetentionCheckInterval time.Duration // log.retention.check.interval.ms (default 5 min)
	Now                    func() time.Time
	// FlushCheckInterval is how often flush.ms and segment.ms are checked
	// (default 1 s).
	FlushCheckInterval time.Duration
	// CleanerInterval is how often compacted logs are checked for new
	// segments to clean (default 15 s, log.cleaner.backoff.ms).
	CleanerInterval time.Duration
}

// Manager owns every partition log under one data directory, the shared
// FileCache, and the background goroutines: retention, segment.ms rolls,
// flush.ms flushes and the compaction cleaner.
type Manager struct {
	fs     vfs.FS
	dir    string
	opts   ManagerOptions
	files  *FileCache
	logger *zap.Logger

	mu     sync.Mutex
	logs   map[TopicPartition]*Log
	closed bool

	stop chan struct{}
	wg   sync.WaitGroup
}

// NewManager opens the data directory (creating it) and starts the
// background loops. Partition logs are opened with Open.
func NewManager(fsys vfs.FS, dataDir string, opts ManagerOptions) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = 1000
	}
	if opts.RetentionCheckInterval <= 0 {
		opts.RetentionCheckInterval = 5 * time.Minute
	}
	if opts.FlushCheckInterval <= 0 {
		opts.FlushCheckInterval = time.Second
	}
	if opts.CleanerInterval <= 0 {
		opts.CleanerInterval = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := fsys.MkdirAll(dataDir); err != nil {
		return nil, fmt.Errorf("log manager: create data dir %s: %w", dataDir, err)
	}
	m := &Manager{
		fs: fsys, dir: dataDir, opts: opts, files: NewFileCache(opts.MaxOpenFiles),
		logger: opts.Logger, logs: map[TopicPartition]*Log{}, stop: make(chan struct{}),
	}
	m.loop(opts.RetentionCheckInterval, func(l *Log) error {
		_, err := l.EnforceRetention()
		return err
	})
	m.loop(opts.FlushCheckInterval, func(l *Log) error {
		return errors.Join(l.MaybeRoll(), l.MaybeFlush())
	})
	m.loop(opts.CleanerInterval, func(l *Log) error {
		_, err := l.MaybeCompact()
		return err
	})
	return m, nil
}

// Files returns the shared file cache.
func (m *Manager) Files() *FileCache { return m.files }

func (m *Manager) loop(every time.Duration, fn func(*Log) error) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
			for _, l := range m.snapshot() {
				select {
				case <-m.stop:
					return
				default:
				}
				if err := fn(l); err != nil && !errors.Is(err, ErrClosed) {
					m.logger.Warn("log maintenance failed", zap.String("partition_dir", l.dir), zap.Error(err))
				}
			}
		}
	}()
}

func (m *Manager) snapshot() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	return out
}

// Open opens (or creates) the log of a partition. A log already open is
// returned as is (its config updated to cfg).
func (m *Manager) Open(topic string, partition int32, cfg Config) (*Log, error) {
	if topic == "" || strings.ContainsAny(topic, "/\\") || topic == "." || topic == ".." || partition < 0 {
		return nil, fmt.Errorf("log manager: invalid partition %q/%d", topic, partition)
	}
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("log manager: %w", ErrClosed)
	}
	if l, ok := m.logs[tp]; ok {
		l.SetConfig(cfg)
		return l, nil
	}
	l, err := Open(m.fs, path.Join(m.dir, tp.Dir()), cfg, Options{Logger: m.logger, Now: m.opts.Now, Files: m.files})
	if err != nil {
		return nil, err
	}
	m.logs[tp] = l
	return l, nil
}

// Get returns an open partition log.
func (m *Manager) Get(topic string, partition int32) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.logs[TopicPartition{topic, partition}]
	return l, ok
}

// Delete closes a partition's log and removes its directory.
func (m *Manager) Delete(topic string, partition int32) error {
	tp := TopicPartition{topic, partition}
	m.mu.Lock()
	l, ok := m.logs[tp]
	delete(m.logs, tp)
	m.mu.Unlock()
	if ok {
		return l.Delete()
	}
	if err := m.fs.RemoveAll(path.Join(m.dir, tp.Dir())); err != nil {
		return fmt.Errorf("log manager: delete %s: %w", tp.Dir(), err)
	}
	return nil
}

// Existing lists the partitions found on disk, sorted.
func (m *Manager) Existing() ([]TopicPartition, error) {
	names, err := m.fs.List(m.dir)
	if err != nil {
		return nil, fmt.Errorf("log manager: list %s: %w", m.dir, err)
	}
	var out []TopicPartition
	for _, n := range names {
		tp, ok := ParsePartitionDir(n)
		if !ok {
			continue
		}
		if fi, err := m.fs.Stat(path.Join(m.dir, n)); err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// Close stops the background loops and closes every log cleanly.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	m.mu.Unlock()
	m.wg.Wait()
	var errs []error
	for _, l := range m.snapshot() {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
