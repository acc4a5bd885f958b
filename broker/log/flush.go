package log

import (
	"fmt"

	"go.uber.org/zap"
)

// Flush makes every appended batch durable (fdatasync of the segments that
// hold offsets at or above the recovery point) and advances the recovery
// point. Flushes are grouped: concurrent callers wait for one flusher, and a
// caller whose appends were covered by a flush that ran meanwhile returns
// without another sync.
func (l *Log) Flush() error {
	l.mu.RLock()
	target := l.leo
	closed, offline := l.closed, l.offline
	l.mu.RUnlock()
	if closed {
		return fmt.Errorf("log %s: flush: %w", l.dir, ErrClosed)
	}
	if offline != nil {
		return offline
	}
	return l.flushTo(target)
}

func (l *Log) flushTo(target int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	if l.offline != nil {
		// A flush that held flushMu before us failed its fsync (the
		// background flush after a roll, say) after our caller checked:
		// the bytes it dropped may be ours, and a sync now would succeed
		// without making them durable. Never report such a flush done.
		err := l.offline
		l.mu.RUnlock()
		return err
	}
	if l.recoveryPoint >= target {
		l.mu.RUnlock()
		return nil
	}
	leo := l.leo
	var hs []*handle
	var err error
	for i := l.segIndexLocked(l.recoveryPoint); i < len(l.segs); i++ {
		s := l.segs[i]
		h, aerr := l.files.acquire(s, s.act != nil)
		if aerr != nil {
			err = aerr
			break
		}
		hs = append(hs, h)
	}
	l.mu.RUnlock()
	var syncErr error
	for _, h := range hs {
		if err == nil && syncErr == nil {
			if serr := h.f.Sync(); serr != nil {
				syncErr = fmt.Errorf("sync segment %d: %w", h.seg.base, serr)
			}
		}
		h.release()
	}
	if err != nil {
		return fmt.Errorf("log %s: flush: %w", l.dir, err)
	}
	if syncErr != nil {
		// After a failed fsync the unsynced bytes may or may not reach the
		// disk, and the kernel may never retry them (it marks the pages
		// clean), so a later successful sync proves nothing: go offline,
		// as Kafka does; reopening recovers from the recovery point.
		return l.goOffline(fmt.Errorf("flush: %w", syncErr))
	}
	l.mu.Lock()
	// The checkpoint is written (durably) only when the recovery point moves
	// to another segment, so recovery work after a crash stays within about
	// one segment without an extra fsync per flush.
	durable := l.segIndexLocked(l.ckWritten.recoveryPoint) != l.segIndexLocked(leo)
	if leo > l.recoveryPoint {
		l.recoveryPoint = leo
	}
	l.lastFlush = l.now()
	l.mu.Unlock()
	if durable {
		// The data is durable; a checkpoint that cannot be written (a full
		// disk) only leaves the recovery point on disk older, so recovery
		// after a crash checks more: not a failed flush.
		if err := l.writeCheckpoint(true); err != nil {
			l.logger.Warn("writing the recovery-point checkpoint failed; recovery after a crash will start from the previous one", zap.Error(err))
		}
	}
	return nil
}

// flushAll is Flush for Close: it syncs even a log that is being closed.
func (l *Log) flushAll() error {
	l.mu.RLock()
	target := l.leo
	l.mu.RUnlock()
	if err := l.flushTo(target); err != nil {
		return err
	}
	return l.writeCheckpoint(true)
}

// MaybeFlush flushes if flush.ms has elapsed since the last flush and there
// is unflushed data (the Manager calls it periodically).
func (l *Log) MaybeFlush() error {
	l.mu.RLock()
	due := !l.closed && l.offline == nil && l.leo > l.recoveryPoint && l.now().Sub(l.lastFlush) >= l.cfg.FlushMs
	l.mu.RUnlock()
	if !due {
		return nil
	}
	return l.Flush()
}
