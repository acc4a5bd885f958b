package logdir

import (
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"weir/broker/log"
	"weir/broker/metadata"
)

// Each directory has its own state; the broker-wide state is writable
// while any directory writes, full while any is full, failed when all
// failed; the report lists the directories that cannot write with the
// partitions they hold, and an error reported for one directory leaves
// the other alone.
func TestDirsPerDirectoryState(t *testing.T) {
	d, err := NewDirs(Config{}, []string{"/a", "/b"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.SetPartitions(func(dir string) []log.TopicPartition {
		return map[string][]log.TopicPartition{
			"/a": {{Topic: "t", Partition: 0}, {Topic: "t", Partition: 2}, {Topic: "u", Partition: 1}},
			"/b": {{Topic: "t", Partition: 1}},
		}[dir]
	})
	var changes atomic.Int32
	d.Watch(func() { changes.Add(1) })
	if st, dirs := d.StorageReport(); st != metadata.StorageOK || dirs != nil {
		t.Fatalf("all writable: %q %v", st, dirs)
	}
	eio := &os.PathError{Op: "write", Path: "/a/t-0/x", Err: syscall.EIO}
	if st := d.Report("/a", eio); st != metadata.StorageFailed {
		t.Fatalf("Report(EIO) = %q", st)
	}
	if d.Usable("/a") || !d.Usable("/b") || d.Usable("/c") {
		t.Fatal("Usable wrong after /a failed")
	}
	st, dirs := d.StorageReport()
	if st != metadata.StorageOK || len(dirs) != 1 || dirs[0].Path != "/a" || dirs[0].State != metadata.StorageFailed ||
		len(dirs[0].Partitions["t"]) != 2 || len(dirs[0].Partitions["u"]) != 1 {
		t.Fatalf("/a failed: %q %+v", st, dirs)
	}
	if st, _ := d.Monitor("/b").State(); st != metadata.StorageOK {
		t.Fatalf("/b: %q", st)
	}
	if changes.Load() != 1 {
		t.Fatalf("%d notifications, want 1", changes.Load())
	}
	d.Report("/b", &os.PathError{Op: "write", Path: "/b/t-1/x", Err: syscall.ENOSPC})
	if st, dirs := d.StorageReport(); st != metadata.StorageFull || len(dirs) != 2 || dirs[1].State != metadata.StorageFull {
		t.Fatalf("/a failed, /b full: %q %+v", st, dirs)
	}
	d.Monitor("/b").Report(eio)
	if st, cause := d.State(); st != metadata.StorageFailed || cause == nil {
		t.Fatalf("both failed: %q %v", st, cause)
	}
	if d.Report("/c", eio) != metadata.StorageFailed {
		t.Fatal("an unknown directory's error is not classified")
	}
	if _, err := NewDirs(Config{}, []string{"/a", "/a"}); err == nil {
		t.Fatal("a directory listed twice accepted")
	}
}
