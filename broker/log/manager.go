package log

import (
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
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
	// segments to clean (default 15 s, log.cleaner.backoff.ms) when
	// Cleaner is nil.
	CleanerInterval time.Duration
	// Cleaner, if set, gives the log cleaner's broker settings
	// (log.cleaner.*). It is called before every cleaning round, so a
	// changed value applies from the next round; WakeCleaner starts one
	// at once (after a change of log.cleaner.backoff.ms, say).
	Cleaner func() CleanerConfig
	// RecoveryThreads is how many partitions LoadExisting opens (and
	// recovers) at once: Kafka's num.recovery.threads.per.data.dir
	// (default: GOMAXPROCS).
	RecoveryThreads int
	// OnOffline, if set, is called when a partition's log goes offline
	// after a storage failure (see Log.Offline and Options.OnOffline for
	// the calling context), with its error.
	OnOffline func(tp TopicPartition, err error)
	// DirUsable, if set, tells whether a new partition may be placed in
	// a log directory (broker/logdir: it takes writes). nil: every one.
	DirUsable func(dir string) bool
	// OnDirFailed, if set, is called (once) for a log directory of
	// several that cannot be created or listed at startup: the manager
	// goes on with the others (see Open for what it refuses then).
	OnDirFailed func(dir string, err error)
}

// ErrNoLogDir: no log directory can take a new partition (every one is
// full or failed).
var ErrNoLogDir = errors.New("no log directory can take a new partition")

// Manager owns every partition log under its log directories (Kafka's
// log.dirs), the shared FileCache, and the background goroutines:
// retention, segment.ms rolls, flush.ms flushes and the compaction
// cleaner. A partition lives in one directory: the one holding it on
// disk, else, when created, the usable one holding the fewest partitions
// (Kafka's LogManager.nextLogDirs).
type Manager struct {
	fs     vfs.FS
	dirs   []string
	opts   ManagerOptions
	files  *FileCache
	logger *zap.Logger

	mu     sync.Mutex
	logs   map[TopicPartition]*Log
	loaded map[TopicPartition]*Log   // opened by LoadExisting, not yet claimed by Open
	where  map[TopicPartition]string // directory of each log in logs or loaded
	// unlisted are the directories that could not be created or listed
	// (only with several); pending the partitions refused while there is
	// one, each with the directory that may hold it.
	unlisted map[string]error
	pending  map[TopicPartition]string
	loading  chan struct{} // closed when a running LoadExisting ends
	closed   bool

	stop chan struct{}
	wake chan struct{} // WakeCleaner
	wg   sync.WaitGroup
}

// NewManager opens the data directory (creating it) and starts the
// background loops. Partition logs are opened with Open.
func NewManager(fsys vfs.FS, dataDir string, opts ManagerOptions) (*Manager, error) {
	return NewManagerDirs(fsys, []string{dataDir}, opts)
}

// NewManagerDirs is NewManager over several log directories (Kafka's
// log.dirs), each created if missing. They must be distinct.
func NewManagerDirs(fsys vfs.FS, dirs []string, opts ManagerOptions) (*Manager, error) {
	if len(dirs) == 0 {
		return nil, errors.New("log manager: no log directory")
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		c := path.Clean(d)
		if d == "" || seen[c] {
			return nil, fmt.Errorf("log manager: log directories %q: empty or repeated %q", dirs, d)
		}
		seen[c] = true
	}
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
	m := &Manager{
		fs: fsys, dirs: slices.Clone(dirs), opts: opts, files: NewFileCache(opts.MaxOpenFiles),
		logger: opts.Logger, logs: map[TopicPartition]*Log{}, loaded: map[TopicPartition]*Log{},
		where: map[TopicPartition]string{}, unlisted: map[string]error{}, pending: map[TopicPartition]string{},
		stop: make(chan struct{}), wake: make(chan struct{}, 1),
	}
	for _, d := range dirs {
		if err := fsys.MkdirAll(d); err != nil {
			err = fmt.Errorf("log manager: create log directory %s: %w", d, err)
			if len(dirs) == 1 || !m.dirFailed(d, err) {
				return nil, err
			}
		}
	}
	m.loop(opts.RetentionCheckInterval, func(l *Log) error {
		_, err := l.EnforceRetention()
		return err
	})
	m.loop(opts.FlushCheckInterval, func(l *Log) error {
		return errors.Join(l.MaybeRoll(), l.MaybeFlush())
	})
	m.cleanerLoop()
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
	dir, err := m.dirFor(tp)
	if err != nil {
		return nil, fmt.Errorf("log manager: open %s: %w", tp.Dir(), err)
	}
	delete(m.pending, tp)
	l, err := Open(m.fs, path.Join(dir, tp.Dir()), cfg, m.logOptions(tp))
	if err != nil {
		return nil, err
	}
	m.logs[tp] = l
	m.where[tp] = dir
	return l, nil
}

// dirFor returns the directory of a partition not open: the one holding
// it on disk, else the usable one with the fewest partitions (ties: the
// first in order), as Kafka's LogManager.nextLogDirs. m.mu held.
//
// While a directory could not be listed at startup, a partition found in
// none of the others is refused (ErrOffline), not created empty: it may be
// in the unreadable directory, and an empty replica could be elected over
// the records it holds there (Kafka refuses alike: LogManager.getOrCreateLog
// with offline directories and isNew false). PartitionsIn reports it with
// that directory, so the controller treats the replica as failed. Kafka
// knows a new partition from the controller's request; weir does not, so
// new partitions get no replica here either until the broker restarts
// with every directory readable.
func (m *Manager) dirFor(tp TopicPartition) (string, error) {
	if len(m.dirs) == 1 {
		return m.dirs[0], nil
	}
	for _, d := range m.dirs {
		if _, bad := m.unlisted[d]; bad {
			continue
		}
		if fi, err := m.fs.Stat(path.Join(d, tp.Dir())); err == nil && fi.IsDir() {
			return d, nil
		}
	}
	for _, d := range m.dirs {
		if err, bad := m.unlisted[d]; bad {
			m.pending[tp] = d
			return "", fmt.Errorf("%w: not in any readable log directory, and %s could not be read at startup (%v): not creating an empty log in its place", ErrOffline, d, err)
		}
	}
	counts := make(map[string]int, len(m.dirs))
	for _, d := range m.where {
		counts[d]++
	}
	best := ""
	for _, d := range m.dirs {
		if m.opts.DirUsable != nil && !m.opts.DirUsable(d) {
			continue
		}
		if best == "" || counts[d] < counts[best] {
			best = d
		}
	}
	if best == "" {
		return "", ErrNoLogDir
	}
	return best, nil
}

// Dirs returns the log directories, in configuration order.
func (m *Manager) Dirs() []string { return slices.Clone(m.dirs) }

// DirOf returns the directory of an open (or loaded) partition log.
func (m *Manager) DirOf(topic string, partition int32) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.where[TopicPartition{topic, partition}]
	return d, ok
}

// PartitionsIn returns the open (or loaded) partition logs of a
// directory, and the partitions refused because it may hold them (see
// dirFor), sorted.
func (m *Manager) PartitionsIn(dir string) []TopicPartition {
	m.mu.Lock()
	var out []TopicPartition
	for tp, d := range m.where {
		if d == dir {
			out = append(out, tp)
		}
	}
	for tp, d := range m.pending {
		if d == dir {
			out = append(out, tp)
		}
	}
	m.mu.Unlock()
	sortTPs(out)
	return out
}

func sortTPs(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
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
	found, err := m.existing()
	if err != nil {
		return err
	}
	tps := make([]TopicPartition, 0, len(found))
	for tp := range found {
		tps = append(tps, tp)
	}
	sortTPs(tps)
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
				l, err := Open(m.fs, path.Join(found[tp], tp.Dir()), c, m.logOptions(tp))
				m.mu.Lock()
				if err == nil && !m.closed {
					m.loaded[tp] = l
					m.where[tp] = found[tp]
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
	delete(m.where, tp)
	delete(m.pending, tp)
	m.mu.Unlock()
	if ok {
		return l.Delete()
	}
	for _, d := range m.dirs {
		if m.isUnlisted(d) {
			continue
		}
		if err := m.fs.RemoveAll(path.Join(d, tp.Dir())); err != nil {
			return fmt.Errorf("log manager: delete %s: %w", path.Join(d, tp.Dir()), err)
		}
	}
	return nil
}

func (m *Manager) isUnlisted(dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, bad := m.unlisted[dir]
	return bad
}

// dirFailed records that dir cannot be created or listed; it reports
// false when no other directory is left.
func (m *Manager) dirFailed(dir string, err error) bool {
	m.mu.Lock()
	_, seen := m.unlisted[dir]
	if !seen {
		m.unlisted[dir] = err
	}
	left := len(m.dirs) - len(m.unlisted)
	m.mu.Unlock()
	if left == 0 {
		return false
	}
	if !seen {
		m.logger.Error("log directory cannot be read: going on with the others; partitions not found in them are refused until a restart with it readable",
			zap.String("dir", dir), zap.Error(err))
		if m.opts.OnDirFailed != nil {
			m.opts.OnDirFailed(dir, err)
		}
	}
	return true
}

// Existing lists the partitions found on disk, sorted.
func (m *Manager) Existing() ([]TopicPartition, error) {
	found, err := m.existing()
	if err != nil {
		return nil, err
	}
	out := make([]TopicPartition, 0, len(found))
	for tp := range found {
		out = append(out, tp)
	}
	sortTPs(out)
	return out, nil
}

// existing maps each partition found on disk to its directory. A
// partition in two directories is an error, as in Kafka ("Duplicate log
// directories found"): which copy is current cannot be told.
func (m *Manager) existing() (map[TopicPartition]string, error) {
	out := map[TopicPartition]string{}
	for _, d := range m.dirs {
		if m.isUnlisted(d) {
			continue
		}
		names, err := m.fs.List(d)
		if err != nil {
			err = fmt.Errorf("log manager: list %s: %w", d, err)
			if len(m.dirs) == 1 || !m.dirFailed(d, err) {
				return nil, err
			}
			continue
		}
		for _, n := range names {
			tp, ok := ParsePartitionDir(n)
			if !ok {
				continue
			}
			if fi, err := m.fs.Stat(path.Join(d, n)); err != nil || !fi.IsDir() {
				continue
			}
			if prev, dup := out[tp]; dup {
				return nil, fmt.Errorf("log manager: partition %s is in two log directories, %s and %s; remove the stale copy", tp.Dir(), prev, d)
			}
			out[tp] = d
		}
	}
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
