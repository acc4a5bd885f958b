package log

import (
	"errors"
	"fmt"
	"path"
	"runtime"
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
	// RecoveryThreads is how many partitions LoadExisting opens (and
	// recovers) at once: Kafka's num.recovery.threads.per.data.dir
	// (default: GOMAXPROCS).
	RecoveryThreads int
	// OnOffline, if set, is called when a partition's log goes offline
	// after a storage failure (see Log.Offline and Options.OnOffline for
	// the calling context), with its error.
	OnOffline func(tp TopicPartition, err error)
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

	mu      sync.Mutex
	logs    map[TopicPartition]*Log
	loaded  map[TopicPartition]*Log // opened by LoadExisting, not yet claimed by Open
	loading chan struct{}           // closed when a running LoadExisting ends
	closed  bool

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
	if opts.RecoveryThreads <= 0 {
		opts.RecoveryThreads = runtime.GOMAXPROCS(0)
	}
	if err := fsys.MkdirAll(dataDir); err != nil {
		return nil, fmt.Errorf("log manager: create data dir %s: %w", dataDir, err)
	}
	m := &Manager{
		fs: fsys, dir: dataDir, opts: opts, files: NewFileCache(opts.MaxOpenFiles),
		logger: opts.Logger, logs: map[TopicPartition]*Log{}, loaded: map[TopicPartition]*Log{}, stop: make(chan struct{}),
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
	if ch := m.loading; ch != nil {
		m.mu.Unlock()
		<-ch // LoadExisting may be opening this very directory
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("log manager: %w", ErrClosed)
	}
	if l, ok := m.logs[tp]; ok {
		l.SetConfig(cfg)
		return l, nil
	}
	if l, ok := m.loaded[tp]; ok {
		delete(m.loaded, tp)
		l.SetConfig(cfg)
		m.logs[tp] = l
		return l, nil
	}
	l, err := Open(m.fs, path.Join(m.dir, tp.Dir()), cfg, m.logOptions(tp))
	if err != nil {
		return nil, err
	}
	m.logs[tp] = l
	return l, nil
}

func (m *Manager) logOptions(tp TopicPartition) Options {
	o := Options{Logger: m.logger, Now: m.opts.Now, Files: m.files}
	if m.opts.OnOffline != nil {
		o.OnOffline = func(_ *Log, err error) { m.opts.OnOffline(tp, err) }
	}
	return o
}

// LoadExisting opens every partition log found under the data directory,
// RecoveryThreads at a time, so that the recovery after an unclean
// shutdown runs in parallel over partitions (Kafka's
// num.recovery.threads.per.data.dir) instead of one partition at a time as
// the broker claims them. cfg gives a partition's config (nil: defaults;
// only index.interval.bytes matters to recovery, and Open sets the real
// config). The logs wait, untouched by retention and compaction, until
// Open claims them; Close closes those never claimed. A partition that
// fails to open is left for Open to retry; the errors are returned joined.
func (m *Manager) LoadExisting(cfg func(TopicPartition) Config) error {
	m.mu.Lock()
	if m.loading != nil || len(m.logs) > 0 || len(m.loaded) > 0 {
		m.mu.Unlock()
		return errors.New("log manager: LoadExisting runs once, before any Open")
	}
	done := make(chan struct{})
	m.loading = done
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.loading = nil
		m.mu.Unlock()
		close(done)
	}()
	tps, err := m.Existing()
	if err != nil {
		return err
	}
	work := make(chan TopicPartition)
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	for i := 0; i < min(m.opts.RecoveryThreads, len(tps)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tp := range work {
				c := DefaultConfig()
				if cfg != nil {
					c = cfg(tp)
				}
				l, err := Open(m.fs, path.Join(m.dir, tp.Dir()), c, m.logOptions(tp))
				m.mu.Lock()
				if err == nil && !m.closed {
					m.loaded[tp] = l
					l = nil
				}
				m.mu.Unlock()
				if l != nil {
					l.Close() // the manager was closed meanwhile
				}
				if err != nil {
					emu.Lock()
					errs = append(errs, err)
					emu.Unlock()
				}
			}
		}()
	}
	for _, tp := range tps {
		work <- tp
	}
	close(work)
	wg.Wait()
	return errors.Join(errs...)
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
	if !ok {
		l, ok = m.loaded[tp]
	}
	delete(m.logs, tp)
	delete(m.loaded, tp)
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
	m.mu.Lock()
	for tp, l := range m.loaded {
		delete(m.loaded, tp)
		m.logs[tp] = l
	}
	m.mu.Unlock()
	for _, l := range m.snapshot() {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
