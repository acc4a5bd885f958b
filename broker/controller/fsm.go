package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"weir/broker/metadata"
)

// fsm is the Raft state machine on every node: the metadata image, the
// index of the last applied entry, and the watchers.
//
// One Raft log entry holds a batch of metadata records (JSON array). They
// are applied in order; a record the image refuses is skipped and logged
// (the leader checked every record against the same image before
// proposing, so this does not happen unless the code disagrees with
// itself, and then every node skips it alike).
type fsm struct {
	log *zap.Logger

	mu       sync.Mutex // serializes Apply/Restore and watcher registration
	watchers []func(metadata.Change)
	img      atomic.Pointer[metadata.Image]

	applied  atomic.Uint64 // Raft index of the last applied entry
	notifyMu sync.Mutex
	notify   chan struct{} // closed when applied advances
}

func newFSM(lg *zap.Logger) *fsm {
	f := &fsm{log: lg, notify: make(chan struct{})}
	f.img.Store(&metadata.Image{})
	return f
}

func (f *fsm) image() *metadata.Image { return f.img.Load() }

func (f *fsm) watch(fn func(metadata.Change)) {
	f.mu.Lock()
	f.watchers = append(f.watchers, fn)
	f.mu.Unlock()
}

// Apply applies one committed entry.
func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		f.advance(l.Index)
		return nil
	}
	recs, err := metadata.DecodeRecords(l.Data)
	f.mu.Lock()
	if err != nil {
		f.log.Error("undecodable metadata entry skipped", zap.Uint64("index", l.Index), zap.Error(err))
	}
	skipped := 0
	for _, r := range recs {
		before := f.img.Load()
		after, err := before.Apply(r)
		if err != nil {
			skipped++
			f.log.Error("metadata record refused by the image; skipped", zap.Uint64("index", l.Index), zap.String("type", string(r.Type)), zap.Error(err))
			continue
		}
		f.img.Store(after)
		for _, w := range f.watchers {
			w(metadata.Change{Record: r, Before: before, After: after})
		}
	}
	f.mu.Unlock()
	f.advance(l.Index)
	return skipped
}

// advance records idx as applied and wakes the waiters.
func (f *fsm) advance(idx uint64) {
	f.notifyMu.Lock()
	if idx > f.applied.Load() {
		f.applied.Store(idx)
		close(f.notify)
		f.notify = make(chan struct{})
	}
	f.notifyMu.Unlock()
}

// waitApplied blocks until the entry at idx is applied here or ctx ends.
func (f *fsm) waitApplied(ctx context.Context, idx uint64) error {
	for {
		f.notifyMu.Lock()
		ch := f.notify
		done := f.applied.Load() >= idx
		f.notifyMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for metadata entry %d to apply here: %w", idx, ctx.Err())
		}
	}
}

// Snapshot captures the image (immutable, so capturing is free).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{img: f.img.Load()}, nil
}

// Restore replaces the image with a snapshot's. Watchers see one Change
// with a zero Record and the whole new image.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var recs []metadata.Record
	if err := json.NewDecoder(rc).Decode(&recs); err != nil {
		return fmt.Errorf("controller: reading metadata snapshot: %w", err)
	}
	img := &metadata.Image{}
	for _, r := range recs {
		next, err := img.Apply(r)
		if err != nil {
			return fmt.Errorf("controller: metadata snapshot record %s: %w", r.Type, err)
		}
		img = next
	}
	f.mu.Lock()
	before := f.img.Load()
	f.img.Store(img)
	for _, w := range f.watchers {
		w(metadata.Change{Before: before, After: img})
	}
	f.mu.Unlock()
	return nil
}

type fsmSnapshot struct{ img *metadata.Image }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := metadata.EncodeRecords(s.img.Records())
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("controller: writing metadata snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
