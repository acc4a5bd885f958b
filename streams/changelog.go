package streams

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/streams/internal/store"
)

// Changelog layout
//
// A store's changelog topic <app>-<store>-changelog has one partition per
// input partition and is compacted. Task <topic>-<p> writes partition p:
//
//	entry   key = store key, value = store value (null = deleted)
//	marker  key = MarkerKey, header MarkerHeader, value = markerValue
//
//	markerValue  version 1 | varint input offset | varint stream time
//	             version 2 | the same | source positions (dedupe.go)
//
// The task writes entries whenever its cache flushes (at every commit, and
// early when the cache is over budget) and, at every commit, one marker
// per store after its entries: "everything before me reflects the input
// up to offset N (exclusive), at stream time T". Offsets are committed to
// the group only after entries and markers are acknowledged.
//
// Restore applies records in offset order, but only up to the last marker:
// entries after it are a flush that its writer did not finish (it died
// between flushing and committing). The input from the marker's offset on
// is processed again, and the new owner first rewrites the current value
// of every key that unfinished flush touched, so the orphaned values are
// superseded in the log (and, once compacted, gone). Replays are therefore
// idempotent for the state: a store holds each input record exactly once,
// whatever crashed when. (Compaction must not run on the orphaned tail
// before the new owner rewrites it: Kafka and weir never compact the
// active segment, and changelogs are created with min.compaction.lag.ms.)
const (
	MarkerKey    = "\x00weir.streams.marker"
	MarkerHeader = "weir.streams.marker"
)

var errBadMarker = errors.New("malformed changelog marker")

// markerRecord is a marker covering input up to inputOffset (exclusive)
// at streamTime, with the store's repartition source positions (version 2)
// if it has any.
func markerRecord(topic string, p int32, inputOffset, streamTime int64, seen map[string]*srcPos) *kgo.Record {
	v := []byte{1}
	if len(seen) > 0 {
		v[0] = 2
	}
	v = binary.AppendVarint(v, inputOffset)
	v = binary.AppendVarint(v, streamTime)
	if len(seen) > 0 {
		v = encodePositions(v, seen)
	}
	r := changelogRecord(topic, p, []byte(MarkerKey), v)
	r.Headers = []kgo.RecordHeader{{Key: MarkerHeader, Value: []byte{1}}}
	return r
}

func isMarker(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == MarkerHeader {
			return true
		}
	}
	return false
}

func parseMarker(v []byte) (inputOffset, streamTime int64, seen map[string]*srcPos, err error) {
	if len(v) < 1 || (v[0] != 1 && v[0] != 2) {
		return 0, 0, nil, errBadMarker
	}
	ver := v[0]
	v = v[1:]
	off, n := binary.Varint(v)
	if n <= 0 {
		return 0, 0, nil, errBadMarker
	}
	st, m := binary.Varint(v[n:])
	if m <= 0 {
		return 0, 0, nil, errBadMarker
	}
	if ver == 2 {
		rest := []byte(nil)
		if seen, rest, err = decodePositions(v[n+m:]); err != nil || len(rest) != 0 {
			return 0, 0, nil, errBadMarker
		}
	}
	return off, st, seen, nil
}

// checkpoint is the local file written when a store closes cleanly: the
// store directory equals the changelog through NextChangelog-1, which was
// a marker covering input up to Applied at stream time StreamTime. It is
// deleted when the store opens, so a crash leaves no checkpoint and the
// directory is wiped and restored.
type checkpoint struct {
	NextChangelog int64 `json:"next_changelog_offset"`
	Applied       int64 `json:"applied_input_offset"`
	StreamTime    int64 `json:"stream_time_ms"`
	// Sources: the store's repartition source positions at that marker
	// (encodePositions), if any.
	Sources []byte `json:"sources,omitempty"`
}

func checkpointPath(dir string) string { return dir + ".checkpoint" }

func readCheckpoint(dir string) (checkpoint, bool) {
	b, err := os.ReadFile(checkpointPath(dir))
	if err != nil {
		return checkpoint{}, false
	}
	var c checkpoint
	if json.Unmarshal(b, &c) != nil {
		return checkpoint{}, false
	}
	return c, true
}

func writeCheckpoint(dir string, c checkpoint) error {
	b, _ := json.Marshal(c)
	tmp := checkpointPath(dir) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, checkpointPath(dir))
}

// restore opens s's backend and brings it up to the changelog's last
// marker (see the layout above).
func (t *task) restore(s *taskStore, rd changelogReader) error {
	dir := ""
	var from int64
	streamTime := int64(-1)
	if t.stateDir != "" {
		dir = filepath.Join(t.stateDir, s.spec.name)
		if c, ok := readCheckpoint(dir); ok {
			if err := os.Remove(checkpointPath(dir)); err != nil {
				return err
			}
			from, s.applied, streamTime = c.NextChangelog, c.Applied, c.StreamTime
			s.lastMarker.Store(c.NextChangelog - 1)
			if len(c.Sources) > 0 {
				seen, rest, err := decodePositions(c.Sources)
				if err != nil || len(rest) != 0 {
					return fmt.Errorf("checkpoint of %s: %w", dir, errBadSource)
				}
				s.seen, s.lastPos = seen, nil
			}
		} else if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	b, err := t.openBack(dir)
	if err != nil {
		return err
	}
	batch := b.NewBatch()
	var pending [][]byte
	var total, read int64
	err = rd.read(s.changelog, t.partition, from, func(n int64) { total = n; t.m.restoreTotal.Add(n) }, func(r *kgo.Record) error {
		t.m.restored.Add(1)
		read++
		if isMarker(r) {
			off, st, seen, err := parseMarker(r.Value)
			if err != nil {
				return fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
			}
			s.seen, s.lastPos = seen, nil
			if err := batch.Commit(); err != nil {
				return err
			}
			batch = b.NewBatch()
			pending = pending[:0]
			s.applied, streamTime = off, st
			s.lastMarker.Store(r.Offset)
			return nil
		}
		k := append([]byte(nil), r.Key...)
		if r.Value == nil {
			batch.Delete(k)
		} else {
			batch.Set(k, r.Value)
		}
		pending = append(pending, k)
		return nil
	})
	batch.Discard()
	if err != nil {
		b.Close()
		return err
	}
	// The total was an upper bound (compacted away, aborted, control
	// records): once done, it is what was read.
	t.m.restoreTotal.Add(read - total)
	s.st = store.New(s.spec.name, b, t.cacheMax)
	for _, k := range pending {
		if err := s.st.MarkDirty(k); err != nil {
			return err
		}
		t.needMarker = true
	}
	if streamTime > t.streamTime {
		t.streamTime = streamTime
	}
	ts := s
	s.st.OnFlush = func(k, v []byte) error {
		t.out.send(changelogRecord(ts.changelog, t.partition, k, v), nil)
		if ts.emit == nil {
			return nil
		}
		// An operator failing downstream dead-letters this entry.
		t.emitting, t.emitTopic, t.emitK, t.emitV = true, ts.changelog, k, v
		err := ts.emit(k, v)
		t.emitting = false
		return err
	}
	return nil
}

// close closes the task's stores. clean means the caller just flushed and
// every send was acknowledged: each store is synced and checkpointed so a
// later owner on this machine restores only the changelog's tail.
// Otherwise the directories are left without checkpoints (wiped on open).
func (t *task) close(clean bool) error {
	var first error
	for _, s := range t.stores {
		if s.st == nil {
			continue
		}
		if clean && t.stateDir != "" && t.err == nil {
			dir := filepath.Join(t.stateDir, s.spec.name)
			err := s.st.Sync()
			if err == nil {
				c := checkpoint{NextChangelog: s.lastMarker.Load() + 1, Applied: s.applied, StreamTime: t.streamTime}
				if len(s.seen) > 0 {
					c.Sources = encodePositions(nil, s.seen)
				}
				err = writeCheckpoint(dir, c)
			}
			if err != nil && first == nil {
				first = fmt.Errorf("task %s: checkpointing store %s: %w", t.id, s.spec.name, err)
			}
		}
		if err := s.st.Close(); err != nil && first == nil {
			first = fmt.Errorf("task %s: closing store %s: %w", t.id, s.spec.name, err)
		}
		s.st = nil
	}
	return first
}
