package metadata

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func openT(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := OpenFile(dir, nil)
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFileStoreLifecycleAndReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir)
	if _, err := s.InitCluster(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrNoBrokers) {
		t.Fatalf("create before broker registration: got %v, want ErrNoBrokers", err)
	}
	if err := s.RegisterBroker(ctx, Broker{NodeID: 1, Host: "127.0.0.1", Port: 9092}); err != nil {
		t.Fatal(err)
	}
	var changes []RecordType
	s.Watch(func(c Change) { changes = append(changes, c.Record.Type) })

	a, err := s.CreateTopic(ctx, TopicSpec{Name: "a", Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Partitions) != 3 || a.Partitions[2].Leader != 1 || a.ID == (UUID{}) {
		t.Fatalf("topic a = %+v", a)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "b/c", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "x", Partitions: 1, ReplicationFactor: 2}); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 2 on one broker: %v", err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "v", Partitions: 1, ReplicationFactor: 1, ValidateOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Image().Topic("v"); ok {
		t.Fatal("validate-only create created the topic")
	}
	if _, err := s.CreatePartitions(ctx, "a", 2, nil); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("shrink: %v", err)
	}
	if _, err := s.CreatePartitions(ctx, "a", 5, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AlterTopicConfig(ctx, "a", map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "gone", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteTopic(ctx, "gone"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v", err)
	}
	want := []RecordType{TypeCreateTopic, TypeCreatePartitions, TypeAlterTopicConfig, TypeCreateTopic, TypeDeleteTopic}
	if len(changes) != len(want) {
		t.Fatalf("watcher saw %v, want %v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Fatalf("watcher saw %v, want %v", changes, want)
		}
	}
	s.Close()

	s2 := openT(t, dir)
	im := s2.Image()
	if im.ClusterID() != "c1" || len(im.Brokers()) != 1 || im.NumTopics() != 1 {
		t.Fatalf("replayed image: cluster %q brokers %v topics %d", im.ClusterID(), im.Brokers(), im.NumTopics())
	}
	a2, ok := im.Topic("a")
	if !ok || len(a2.Partitions) != 5 || a2.Configs["cleanup.policy"] != "compact" || a2.Configs["retention.ms"] != "" || a2.ID != a.ID {
		t.Fatalf("replayed topic a = %+v", a2)
	}
	if id, _ := s2.InitCluster(ctx, "other"); id != "c1" {
		t.Fatalf("InitCluster on an initialized cluster returned %q", id)
	}
}

func TestFileStoreTornTail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir)
	if err := s.RegisterBroker(ctx, Broker{NodeID: 0, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "t1", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, FileName)
	good, _ := os.ReadFile(path)
	// A torn half frame, then a frame with a bad CRC.
	bad := appendFrame(nil, []byte(`{"type":"delete_topic","delete_topic":{"name":"t1"}}`))
	bad[5] ^= 0xff
	if err := os.WriteFile(path, append(append(append([]byte{}, good...), bad...), bad[:5]...), 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, dir)
	if _, ok := s2.Image().Topic("t1"); !ok {
		t.Fatal("t1 lost after torn tail")
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(good)) {
		t.Fatalf("file not truncated to %d bytes: %d", len(good), fi.Size())
	}
	if _, err := s2.CreateTopic(ctx, TopicSpec{Name: "t2", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s3 := openT(t, dir)
	if s3.Image().NumTopics() != 2 {
		t.Fatalf("after append past truncation: %d topics", s3.Image().NumTopics())
	}
}

func TestFileStoreCompactsOnOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir)
	if err := s.RegisterBroker(ctx, Broker{NodeID: 0, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		if _, err := s.CreateTopic(ctx, TopicSpec{Name: "churn", Partitions: 1, ReplicationFactor: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteTopic(ctx, "churn"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "keep", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	path := filepath.Join(dir, FileName)
	before, _ := os.Stat(path)
	s2 := openT(t, dir)
	after, _ := os.Stat(path)
	if after.Size() >= before.Size() {
		t.Fatalf("not compacted: %d -> %d bytes", before.Size(), after.Size())
	}
	if k, ok := s2.Image().Topic("keep"); !ok || len(k.Partitions) != 2 || s2.Image().NumTopics() != 1 {
		t.Fatalf("compacted image wrong: %v", s2.Image().Topics())
	}
}

func TestTopicNameRules(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a b", "ü", string(make([]byte, 250))} {
		if ValidateTopicName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range []string{"a", "A-b_c.d", "__consumer_offsets"} {
		if err := ValidateTopicName(good); err != nil {
			t.Errorf("%q rejected: %v", good, err)
		}
	}
	im := &Image{}
	im, _ = im.Apply(Record{Type: TypeRegisterBroker, RegisterBroker: &Broker{NodeID: 0}})
	im, err := im.Apply(Record{Type: TypeCreateTopic, CreateTopic: &CreateTopic{Name: "a.b", ID: NewUUID(), Partitions: []Partition{{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildCreateTopic(im, TopicSpec{Name: "a_b", Partitions: 1, ReplicationFactor: 1}); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("colliding name: %v", err)
	}
}
