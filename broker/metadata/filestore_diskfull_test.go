package metadata

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"weir/broker/brokertest/smallfs"
)

// TestFileStoreFullDiskKeepsLaterRecords: a record whose write a full disk
// cuts short fails and leaves nothing behind, so a record written once
// space is freed survives a restart. (Replay stops at the first bad frame:
// a torn frame left in the middle would drop every record after it.)
func TestFileStoreFullDiskKeepsLaterRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := smallfs.Mount(t, 1<<20)
	dir := filepath.Join(fs.Dir, "dätä-元")
	s, err := OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if _, err := s.InitCluster(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterBroker(ctx, Broker{NodeID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "before", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	sizeBefore := fileSize(t, path)

	fs.Fill(0)
	// Thousands of partitions: a record of many pages, so the write fills
	// the file's last page and then meets ENOSPC (a short write).
	_, err = s.CreateTopic(ctx, TopicSpec{Name: "torn", Partitions: 3000, ReplicationFactor: 1})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create on a full disk: %v, want ENOSPC", err)
	}
	if _, ok := s.Image().Topic("torn"); ok {
		t.Fatal("a record whose write failed was applied")
	}
	if got := fileSize(t, path); got != sizeBefore {
		t.Fatalf("after the failed write the file holds %d bytes, want the %d before it", got, sizeBefore)
	}

	fs.Free()
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "after", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create once space is freed: %v", err)
	}
	s.Close()
	s, err = OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	im := s.Image()
	if _, ok := im.Topic("before"); !ok {
		t.Fatal("topic created before the disk filled is lost after a restart")
	}
	if _, ok := im.Topic("after"); !ok {
		t.Fatal("topic created after space was freed (acknowledged) is lost after a restart")
	}
	if _, ok := im.Topic("torn"); ok {
		t.Fatal("the failed create is there after a restart")
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
