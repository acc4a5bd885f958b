package log

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

// The leader-epoch cache (KIP-101): for each leader epoch present in the
// log, the offset of its first record, in increasing order of both. A
// leader adds (epoch, log end offset) when it takes over (AssignEpoch);
// any append adds an entry when a batch carries a newer epoch than the
// last one. Truncating the log's tail drops the entries at or after the
// new end; ResetTo drops them all.
//
// It is kept in memory and written to "leader-epoch-checkpoint" in the
// partition directory whenever it changes (temporary file + rename, not
// fsynced: after a crash Open checks it against the log, dropping entries
// past the log end and re-adding epochs found in the batches written since
// the recovery point, or in the whole log when the file is missing).
//
//	leader-epoch-checkpoint:   "0\n<count>\n<epoch> <start offset>\n..."
//	                           (Kafka's format)

const epochFileName = "leader-epoch-checkpoint"

// EpochEntry is one leader epoch and the offset of its first record.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Epochs returns a copy of the leader-epoch cache.
func (l *Log) Epochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]EpochEntry(nil), l.epochs...)
}

// LatestEpoch returns the newest leader epoch in the log, -1 when none.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.epochs) == 0 {
		return -1
	}
	return l.epochs[len(l.epochs)-1].Epoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for epoch, as Kafka's
// LeaderEpochFileCache.endOffsetFor: the largest epoch <= epoch in the
// cache and the offset where the next epoch starts (the log end offset
// for the newest epoch). When epoch is older than every cached epoch it
// returns epoch and the start of the first cached one; when it is newer
// than every cached epoch, or the cache is empty, (-1, -1).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return endOffsetFor(l.epochs, epoch, l.leo)
}

func endOffsetFor(es []EpochEntry, epoch int32, leo int64) (int32, int64) {
	if epoch < 0 || len(es) == 0 {
		return -1, -1
	}
	if last := es[len(es)-1]; epoch == last.Epoch {
		return epoch, leo
	}
	// first entry with a larger epoch
	hi := -1
	for i, e := range es {
		if e.Epoch > epoch {
			hi = i
			break
		}
	}
	switch {
	case hi < 0:
		return -1, -1 // newer than anything we know
	case hi == 0:
		return epoch, es[0].StartOffset
	default:
		return es[hi-1].Epoch, es[hi].StartOffset
	}
}

// AssignEpoch records that epoch starts at the current log end offset
// (a leader taking over). An epoch not newer than the latest is ignored.
func (l *Log) AssignEpoch(epoch int32) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	changed := l.addEpochLocked(epoch, l.leo)
	l.mu.Unlock()
	if changed {
		return l.writeEpochs()
	}
	return nil
}

// addEpochLocked appends (epoch, start) when epoch is newer than the last
// entry; an entry for the same start offset with an older epoch is
// replaced (a leader that took over and wrote nothing). l.mu held.
func (l *Log) addEpochLocked(epoch int32, start int64) bool {
	if epoch < 0 {
		return false
	}
	if n := len(l.epochs); n > 0 {
		last := l.epochs[n-1]
		if epoch <= last.Epoch {
			return false
		}
		if last.StartOffset >= start {
			l.epochs = l.epochs[:n-1]
			for len(l.epochs) > 0 && l.epochs[len(l.epochs)-1].StartOffset >= start {
				l.epochs = l.epochs[:len(l.epochs)-1]
			}
		}
	}
	l.epochs = append(l.epochs, EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// truncateEpochsLocked drops the entries starting at or after end.
func (l *Log) truncateEpochsLocked(end int64) bool {
	n := len(l.epochs)
	for n > 0 && l.epochs[n-1].StartOffset >= end {
		n--
	}
	if n == len(l.epochs) {
		return false
	}
	l.epochs = l.epochs[:n]
	return true
}

// writeEpochs persists the cache. Callers hold appendMu (so writes do not
// race each other).
func (l *Log) writeEpochs() error {
	l.mu.RLock()
	es := append([]EpochEntry(nil), l.epochs...)
	l.mu.RUnlock()
	data := fmt.Appendf(nil, "0\n%d\n", len(es))
	for _, e := range es {
		data = fmt.Appendf(data, "%d %d\n", e.Epoch, e.StartOffset)
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, path.Join(l.dir, epochFileName), data, false); err != nil {
		return fmt.Errorf("log %s: write %s: %w", l.dir, epochFileName, err)
	}
	return nil
}

// readEpochs parses the checkpoint file; ok=false when it is missing or
// malformed.
func (l *Log) readEpochs() ([]EpochEntry, bool) {
	data, err := vfs.ReadFile(l.fs, path.Join(l.dir, epochFileName))
	if err != nil {
		if !isNotExist(err) {
			l.logger.Warn("unreadable leader-epoch checkpoint; rebuilding it from the log", zap.Error(err))
		}
		return nil, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	bad := func() ([]EpochEntry, bool) {
		l.logger.Warn("malformed leader-epoch checkpoint; rebuilding it from the log")
		return nil, false
	}
	if len(lines) < 2 || lines[0] != "0" {
		return bad()
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return bad()
	}
	out := make([]EpochEntry, 0, n)
	for _, ln := range lines[2:] {
		e, o, ok := strings.Cut(ln, " ")
		ep, err1 := strconv.ParseInt(e, 10, 32)
		off, err2 := strconv.ParseInt(o, 10, 64)
		if !ok || err1 != nil || err2 != nil || ep < 0 || off < 0 {
			return bad()
		}
		if k := len(out); k > 0 && (int32(ep) <= out[k-1].Epoch || off < out[k-1].StartOffset) {
			return bad()
		}
		out = append(out, EpochEntry{Epoch: int32(ep), StartOffset: off})
	}
	return out, true
}

// loadEpochs builds the cache at Open (after recovery).
func (l *Log) loadEpochs() error {
	es, ok := l.readEpochs()
	from := l.recoveryPoint
	if !ok {
		from = l.logStart
	}
	l.epochs = es
	changed := l.truncateEpochsLocked(l.leo) || !ok
	if from < l.leo {
		err := l.ScanBatches(from, func(h BatchHeader) error {
			if l.addEpochLocked(h.PartitionLeaderEpoch, h.BaseOffset) {
				changed = true
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("rebuilding the leader-epoch cache: %w", err)
		}
	}
	if changed && (len(l.epochs) > 0 || ok) {
		return l.writeEpochs()
	}
	return nil
}
