package logdir

import (
	"errors"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/metadata"
)

// Classify says what a failed write or read tells about the directory:
// StorageFailed for a log taken offline (log.ErrOffline: a failed write
// could not be cut back, or a sync failed), EIO and EROFS; StorageFull for
// ENOSPC and EDQUOT; StorageOK (nothing about the disk) for anything
// else: a corrupt batch, a closed log, a timeout.
func Classify(err error) metadata.StorageState {
	switch {
	case err == nil:
		return metadata.StorageOK
	case errors.Is(err, log.ErrOffline):
		return metadata.StorageFailed
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT),
		errors.Is(err, vfs.ErrNoSpace), errors.Is(err, log.ErrDiskFull):
		return metadata.StorageFull
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EROFS):
		return metadata.StorageFailed
	}
	return metadata.StorageOK
}

// Config configures a Monitor.
type Config struct {
	// Dir is the log directory; FS its file system (nil: vfs.OS).
	Dir string
	FS  vfs.FS
	// ProbeInterval is how often a full directory is probed (default 1s);
	// ProbeBytes how much a probe writes (default 1 MiB): writes resume
	// once that much can be written and synced.
	ProbeInterval time.Duration
	ProbeBytes    int
	// Logger (nil: none).
	Logger *zap.Logger
}

// ProbeFile is the name of the probe written in the directory.
const ProbeFile = ".weir-write-probe"

// Monitor is the state of one log directory, decided from the errors its
// writers and readers report. Safe for concurrent use.
type Monitor struct {
	cfg Config
	log *zap.Logger

	mu       sync.Mutex
	state    metadata.StorageState
	cause    error
	since    time.Time
	watchers []func(metadata.StorageState)
	probing  bool
	closed   bool

	notifyMu sync.Mutex // serializes watcher calls: the last one sees the latest state
	stop     chan struct{}
	wg       sync.WaitGroup
}

// New returns a Monitor of a directory that starts writable.
func New(cfg Config) *Monitor {
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = time.Second
	}
	if cfg.ProbeBytes <= 0 {
		cfg.ProbeBytes = 1 << 20
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Monitor{cfg: cfg, log: lg, stop: make(chan struct{})}
}

// State returns the directory's state and the error that put it there.
func (m *Monitor) State() (metadata.StorageState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.cause
}

// Watch calls fn after every change of state (on the reporting
// goroutine; fn must be quick and must not call Report).
func (m *Monitor) Watch(fn func(metadata.StorageState)) {
	m.mu.Lock()
	m.watchers = append(m.watchers, fn)
	m.mu.Unlock()
}

// Report takes the error of a write, sync or read in the directory; nil
// and errors that say nothing about the disk are ignored. It returns the
// error's classification. A full directory is probed until a write
// succeeds; a failed one stays failed until the broker restarts.
func (m *Monitor) Report(err error) metadata.StorageState {
	return m.report(Classify(err), err)
}

// Fail marks the directory failed whatever err is: for a directory that
// cannot even be listed or created at startup (log.ManagerOptions.
// OnDirFailed), whose error may be any (ENOENT, EACCES, ENOTDIR).
func (m *Monitor) Fail(err error) {
	m.report(metadata.StorageFailed, err)
}

func (m *Monitor) report(st metadata.StorageState, err error) metadata.StorageState {
	if st == metadata.StorageOK {
		return st
	}
	m.mu.Lock()
	if m.closed || m.state == metadata.StorageFailed || m.state == st {
		m.mu.Unlock()
		return st
	}
	m.state, m.cause, m.since = st, err, time.Now()
	probe := st == metadata.StorageFull && !m.probing
	if probe {
		m.probing = true
		m.wg.Add(1)
	}
	m.mu.Unlock()
	if st == metadata.StorageFull {
		m.log.Error("log directory is full: this broker hands the partitions in it to in-sync replicas and leaves their ISRs until writes succeed again",
			zap.String("dir", m.cfg.Dir), zap.Error(err))
	} else {
		m.log.Error("log directory failed: this broker hands the partitions in it to in-sync replicas and serves none of them until it is restarted",
			zap.String("dir", m.cfg.Dir), zap.Error(err))
	}
	if probe {
		go m.probeLoop()
	}
	m.notify()
	return st
}

func (m *Monitor) notify() {
	m.notifyMu.Lock()
	defer m.notifyMu.Unlock()
	m.mu.Lock()
	st, ws := m.state, m.watchers
	m.mu.Unlock()
	for _, fn := range ws {
		fn(st)
	}
}

// probeLoop probes a full directory every ProbeInterval until a probe
// write succeeds (writable again) or fails with an I/O error (failed).
func (m *Monitor) probeLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		err := m.probe()
		m.mu.Lock()
		if m.state != metadata.StorageFull {
			m.probing = false
			m.mu.Unlock()
			return
		}
		var next metadata.StorageState
		switch {
		case err == nil:
			next = metadata.StorageOK
		case Classify(err) == metadata.StorageFailed:
			next = metadata.StorageFailed
		default:
			m.mu.Unlock()
			continue
		}
		full := time.Since(m.since)
		m.state, m.cause, m.probing = next, err, false
		m.mu.Unlock()
		if next == metadata.StorageOK {
			m.log.Warn("log directory takes writes again: this broker rejoins the ISRs of the partitions in it as it catches up",
				zap.String("dir", m.cfg.Dir), zap.Duration("full_for", full))
		} else {
			m.log.Error("log directory failed while full: serving none of its partitions until restarted",
				zap.String("dir", m.cfg.Dir), zap.Error(err))
		}
		m.notify()
		return
	}
}

// probe writes and syncs ProbeBytes in the directory, then removes them.
func (m *Monitor) probe() error {
	name := filepath.Join(m.cfg.Dir, ProbeFile)
	f, err := m.cfg.FS.Create(name)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(make([]byte, m.cfg.ProbeBytes), 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := m.cfg.FS.Remove(name); err == nil {
		err = rerr
	}
	return err
}

// Close stops probing.
func (m *Monitor) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()
}
