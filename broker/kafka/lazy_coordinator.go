package kafka

// Lazy start of the server's coordinators: one mechanism for the group
// coordinator (group_support.go) and the transaction coordinator
// (txn_support.go).
//
// A coordinator is created on the first request that needs it, with the
// configuration set before (SetGroupConfig, SetTxnConfig) or else the
// broker configs; it stops when the server shuts down. After that it is
// no longer running: requests get the coordinator's ErrClosed and the
// leadership hooks leave it alone.

import (
	"errors"
	"sync"

	"go.uber.org/zap"

	"weir/broker/group"
	"weir/broker/replica"
	"weir/broker/txncoord"
)

// lazyCoordinator is one server's coordinator of type C, configured by a
// Cfg, created on first use.
type lazyCoordinator[Cfg any, C interface{ Close() }] struct {
	once    sync.Once
	mu      sync.Mutex
	cfg     *Cfg // set by setConfig before the start
	coord   C
	err     error
	started bool // start ran (coord or err is set)
	stopped bool // the server shut down and the coordinator closed

	// loadMu serializes the loads and unloads of the coordinator's
	// partitions that follow this broker's leadership of them; epochs
	// holds the leader epoch each led partition was loaded in (loadMu).
	loadMu sync.Mutex
	epochs map[int32]int32
}

// setConfig sets the configuration the coordinator starts with; started
// is returned once it started.
func (l *lazyCoordinator[Cfg, C]) setConfig(cfg Cfg, started error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return started
	}
	l.cfg = &cfg
	return nil
}

// get returns the coordinator, starting it on first use: start gets the
// configuration setConfig set (nil: none) and makes the coordinator;
// stop runs when the server shuts down (after Close). While the server
// shuts down get returns closed. what names the coordinator in logs.
func (l *lazyCoordinator[Cfg, C]) get(s *Server, what string, closed error, start func(set *Cfg) (C, error), stop func(C)) (C, error) {
	if s.ctx.Err() != nil {
		var zero C
		return zero, closed // shutting down: do not start another
	}
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.started = true
		l.coord, l.err = start(l.cfg)
		if l.err != nil {
			s.log.Error(what+" failed to start", zap.Error(l.err))
			return
		}
		c := l.coord
		go func() {
			<-s.ctx.Done()
			c.Close()
			if stop != nil {
				stop(c)
			}
			l.mu.Lock()
			l.stopped = true
			l.mu.Unlock()
		}()
	})
	return l.coord, l.err
}

// running returns the coordinator if it started and has not stopped.
func (l *lazyCoordinator[Cfg, C]) running() (C, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started || l.err != nil || l.stopped {
		var zero C
		return zero, false
	}
	return l.coord, true
}

// follow loads or unloads partition rp of the coordinator's topic to
// match this broker's role for it now (decided under loadMu, so the
// order of the leadership hooks' goroutines does not matter): unload
// when this broker does not lead it; else nothing when loaded says it is
// served in this leader epoch already, or load; epochs records the epoch
// it was loaded in (loaded may read it). A failed load is logged as
// failed, except one that came before the coordinator's topic existed
// (its creation is under way: starting, the coordinator loads what this
// broker leads then).
func (l *lazyCoordinator[Cfg, C]) follow(s *Server, rp *replica.Partition, failed string,
	loaded func(p, epoch int32) bool, load func(p, epoch int32) error, unload func(p int32)) {
	l.loadMu.Lock()
	defer l.loadMu.Unlock()
	if l.epochs == nil {
		l.epochs = map[int32]int32{}
	}
	p := rp.Index
	role, _, epoch := rp.State()
	if role != replica.RoleLeader {
		unload(p)
		delete(l.epochs, p)
		return
	}
	if !loaded(p, epoch) {
		if err := load(p, epoch); err != nil {
			if errors.Is(err, group.ErrNotStarted) || errors.Is(err, txncoord.ErrNotStarted) {
				s.log.Debug(failed, zap.Int32("partition", p), zap.Error(err))
				return
			}
			s.log.Warn(failed, zap.Int32("partition", p), zap.Error(err))
			return
		}
	}
	l.epochs[p] = epoch
}
