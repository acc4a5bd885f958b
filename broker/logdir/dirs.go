package logdir

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"weir/broker/log"
	"weir/broker/metadata"
)

// Dirs are a broker's log directories (Kafka's log.dirs), one Monitor
// each, and what the broker reports of them to the controller. Safe for
// concurrent use.
type Dirs struct {
	paths []string
	mons  map[string]*Monitor

	mu         sync.Mutex
	partitions func(dir string) []log.TopicPartition
}

// NewDirs returns the monitors of dirs (each starting writable); cfg is
// the template of each Monitor's Config (its Dir is set per directory).
func NewDirs(cfg Config, dirs []string) (*Dirs, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("logdir: no log directory")
	}
	d := &Dirs{mons: make(map[string]*Monitor, len(dirs))}
	for _, p := range dirs {
		if p == "" {
			return nil, fmt.Errorf("logdir: empty log directory in %q", dirs)
		}
		if _, dup := d.mons[p]; dup {
			return nil, fmt.Errorf("logdir: log directory %q listed twice", p)
		}
		c := cfg
		c.Dir = p
		d.paths = append(d.paths, p)
		d.mons[p] = New(c)
	}
	return d, nil
}

// SetPartitions sets where Report finds the partitions a directory holds
// (log.Manager.PartitionsIn).
func (d *Dirs) SetPartitions(fn func(dir string) []log.TopicPartition) {
	d.mu.Lock()
	d.partitions = fn
	d.mu.Unlock()
}

// Paths returns the directories in configuration order.
func (d *Dirs) Paths() []string { return slices.Clone(d.paths) }

// Monitor returns the monitor of a directory (nil if not one of them).
func (d *Dirs) Monitor(dir string) *Monitor { return d.mons[dir] }

// Usable reports whether a new partition may be placed in dir: it takes
// writes (log.ManagerOptions.DirUsable).
func (d *Dirs) Usable(dir string) bool {
	m := d.mons[dir]
	if m == nil {
		return false
	}
	st, _ := m.State()
	return st == metadata.StorageOK
}

// Report hands the error of a write, sync or read in dir to its monitor
// (Monitor.Report); an unknown dir (a partition not yet placed) goes to
// none.
func (d *Dirs) Report(dir string, err error) metadata.StorageState {
	m := d.mons[dir]
	if m == nil {
		return Classify(err)
	}
	return m.Report(err)
}

// Watch calls fn after every change of state of any directory.
func (d *Dirs) Watch(fn func()) {
	for _, p := range d.paths {
		d.mons[p].Watch(func(metadata.StorageState) { fn() })
	}
}

// State returns the broker-wide state (metadata.Broker.Storage): writable
// while any directory takes writes (new partitions go there); else full
// while any is full; else failed. The error is the cause of the first
// directory not writable.
func (d *Dirs) State() (metadata.StorageState, error) {
	best := metadata.StorageFailed
	var cause error
	for _, p := range d.paths {
		st, err := d.mons[p].State()
		if cause == nil {
			cause = err
		}
		switch {
		case st == metadata.StorageOK:
			return metadata.StorageOK, nil
		case st == metadata.StorageFull:
			best = metadata.StorageFull
		}
	}
	return best, cause
}

// StorageReport is what the broker's heartbeats carry
// (controller.Node.SetStorageReport): the broker-wide State and each
// directory that cannot write with the partitions it holds now.
func (d *Dirs) StorageReport() (metadata.StorageState, []metadata.LogDir) {
	d.mu.Lock()
	parts := d.partitions
	d.mu.Unlock()
	st, _ := d.State()
	var out []metadata.LogDir
	for _, p := range d.paths {
		s, _ := d.mons[p].State()
		if s == metadata.StorageOK {
			continue
		}
		ld := metadata.LogDir{Path: p, State: s}
		if parts != nil {
			for _, tp := range parts(p) {
				if ld.Partitions == nil {
					ld.Partitions = map[string][]int32{}
				}
				ld.Partitions[tp.Topic] = append(ld.Partitions[tp.Topic], tp.Partition)
			}
		}
		out = append(out, ld)
	}
	return st, out
}

// Close stops every monitor.
func (d *Dirs) Close() {
	for _, p := range d.paths {
		d.mons[p].Close()
	}
}

// Abs returns dir as an absolute path (as DescribeLogDirs reports it),
// or dir itself when that fails.
func Abs(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
