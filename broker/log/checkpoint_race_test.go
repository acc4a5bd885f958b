package log

import (
	"sync"
	"testing"

	"weir/broker/log/vfs"
)

// TestConcurrentCheckpointWrites: the flush after a segment roll and
// retention can write the checkpoint at the same time (a hog pass saw
// TestRetentionBySize fail on "rename checkpoint.tmp: file does not
// exist": both wrote the one temporary file, one renamed it first).
// Writers are serialized, and the checkpoint on disk is the last state.
func TestConcurrentCheckpointWrites(t *testing.T) {
	l := mustOpen(t, vfs.NewMem(), tdir, smallCfg(), Options{})
	defer l.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 800)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				l.mu.Lock()
				l.hw++
				l.mu.Unlock()
				if err := l.writeCheckpoint(false); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l.mu.RLock()
	hw := l.hw
	l.mu.RUnlock()
	if ck := l.readCheckpoint(); ck.hw != hw {
		t.Fatalf("checkpoint on disk has high watermark %d, the log %d", ck.hw, hw)
	}
}
