package kafka

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/logdir"
	"weir/broker/metadata"
)

// describeLogDirs asks the broker directly (kgo's client.Request would
// shard the request over the brokers and merge the answers).
func describeLogDirs(t *testing.T, cl *kgo.Client, version int16, topics map[string][]int32) *kmsg.DescribeLogDirsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = version
	if topics != nil {
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		for name, ps := range topics {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = name, ps
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := cl.Broker(0).Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.DescribeLogDirsResponse)
}

// describeLogDirsAt asks at exactly version over a raw connection.
func describeLogDirsAt(t *testing.T, addr string, version int16, topics map[string][]int32) *kmsg.DescribeLogDirsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = version
	if topics != nil {
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
		for name, ps := range topics {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = name, ps
			req.Topics = append(req.Topics, rt)
		}
	}
	return dialRaw(t, addr).roundTrip(req).(*kmsg.DescribeLogDirsResponse)
}

// segmentBytes sums the .log files of a partition directory.
func segmentBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n
}

// TestDescribeLogDirs: the broker's log directory with every partition it
// holds (size = its segment files on disk, offset lag 0, not future), the
// file system's total and usable bytes (v4+), a request for some
// partitions answering only those it holds, and KAFKA_STORAGE_ERROR with
// no topics once broker/logdir has marked the directory failed.
func TestDescribeLogDirs(t *testing.T) {
	t.Parallel()
	mon := logdir.New(logdir.Config{})
	t.Cleanup(mon.Close)
	b := startBroker(t, func(c *Config) {
		c.LogDirState = func(string) (metadata.StorageState, error) { return mon.State() }
	})
	b.srv.cfg.LogDirs = []string{b.dir}
	createTopic(t, b, "dld", 2, nil)
	cl := b.client(kgo.DefaultProduceTopic("dld"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: 0, Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	abs, _ := filepath.Abs(b.dir)
	for _, v := range []int16{1, 3, 4, 5} {
		resp := describeLogDirsAt(t, b.addr, v, nil)
		if resp.Version != v || resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		d := resp.Dirs[0]
		if d.ErrorCode != 0 || d.Dir != abs || len(d.Topics) != 1 || d.Topics[0].Topic != "dld" || len(d.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: dir %+v", v, d)
		}
		if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
			t.Errorf("v%d: total %d usable %d", v, d.TotalBytes, d.UsableBytes)
		}
		for _, p := range d.Topics[0].Partitions {
			want := segmentBytes(t, filepath.Join(b.dir, "dld-"+string(rune('0'+p.Partition))))
			if p.Size != want || p.OffsetLag != 0 || p.IsFuture {
				t.Errorf("v%d partition %d: %+v, want size %d lag 0", v, p.Partition, p, want)
			}
			if p.Partition == 0 && p.Size == 0 {
				t.Errorf("v%d: partition 0 holds records but size 0", v)
			}
		}
	}
	resp := describeLogDirs(t, cl, 4, map[string][]int32{"dld": {1, 7}, "nope": {0}})
	if d := resp.Dirs[0]; len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0].Partition != 1 {
		t.Fatalf("some partitions: %+v", d)
	}
	resp = describeLogDirs(t, cl, 4, map[string][]int32{})
	if d := resp.Dirs[0]; d.ErrorCode != 0 || len(d.Topics) != 0 {
		t.Fatalf("no partitions: %+v", d)
	}

	mon.Report(&os.PathError{Op: "write", Path: "x", Err: syscall.EIO})
	resp = describeLogDirs(t, cl, 4, nil)
	if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != kerr.KafkaStorageError.Code || resp.Dirs[0].Dir != abs || len(resp.Dirs[0].Topics) != 0 {
		t.Fatalf("failed directory: %+v", resp)
	}
}

// TestDescribeLogDirsAuthorization: DESCRIBE on the cluster is needed, as
// Kafka; without it CLUSTER_AUTHORIZATION_FAILED and no directories.
func TestDescribeLogDirsAuthorization(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{}, func(c *Config) { c.LogDirs = []string{t.TempDir()} })
	bob := b.as(t, "bob")
	resp := describeLogDirs(t, bob, 4, nil)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Dirs) != 0 {
		t.Fatalf("bob without DESCRIBE on the cluster: %+v", resp)
	}
	b.grant(t, rule("User:bob", acl.OpDescribe, acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral))
	if resp := describeLogDirs(t, bob, 4, nil); resp.ErrorCode != 0 || len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 {
		t.Fatalf("bob with DESCRIBE on the cluster: %+v", resp)
	}
	if resp := describeLogDirs(t, b.admin, 4, nil); resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("super user: %+v", resp)
	}
}

// TestDescribeLogDirsTwoDirs: a broker with two log directories (Kafka's
// log.dirs) reports both, each with the partitions placed on it (the
// least used, so two each for four partitions) and their sizes; when one
// fails it answers KAFKA_STORAGE_ERROR for that one only and the other
// keeps its partitions, sizes and space.
func TestDescribeLogDirsTwoDirs(t *testing.T) {
	t.Parallel()
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	dirs, err := logdir.NewDirs(logdir.Config{}, []string{dirA, dirB})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dirs.Close)
	logs, err := log.NewManagerDirs(vfs.OS, []string{dirA, dirB}, log.ManagerOptions{DirUsable: dirs.Usable})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	b := startBroker(t, func(c *Config) {
		c.Logs = logs
		c.LogDirs = []string{dirA, dirB}
		c.LogDirState = func(d string) (metadata.StorageState, error) { return dirs.Monitor(d).State() }
	})
	createTopic(t, b, "two", 4, nil)
	cl := b.client(kgo.DefaultProduceTopic("two"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 40; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: int32(i % 4), Value: make([]byte, 50+i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	where := map[int32]string{}
	for p := int32(0); p < 4; p++ {
		d, ok := logs.DirOf("two", p)
		if !ok {
			t.Fatalf("two-%d has no directory", p)
		}
		where[p] = d
	}
	check := func(resp *kmsg.DescribeLogDirsResponse, failedB bool) {
		t.Helper()
		if len(resp.Dirs) != 2 || resp.Dirs[0].Dir != dirA || resp.Dirs[1].Dir != dirB {
			t.Fatalf("dirs: %+v", resp.Dirs)
		}
		for i, d := range resp.Dirs {
			dir := []string{dirA, dirB}[i]
			if i == 1 && failedB {
				if d.ErrorCode != kerr.KafkaStorageError.Code || len(d.Topics) != 0 {
					t.Fatalf("failed %s: %+v", dir, d)
				}
				continue
			}
			if d.ErrorCode != 0 || d.TotalBytes <= 0 || d.UsableBytes <= 0 || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
				t.Fatalf("%s: %+v", dir, d)
			}
			for _, p := range d.Topics[0].Partitions {
				want := segmentBytes(t, filepath.Join(dir, "two-"+strconv.Itoa(int(p.Partition))))
				if where[p.Partition] != dir || p.Size != want || p.Size == 0 || p.OffsetLag != 0 {
					t.Errorf("%s partition %d (in %s): %+v, want size %d", dir, p.Partition, where[p.Partition], p, want)
				}
			}
		}
	}
	check(describeLogDirsAt(t, b.addr, 4, nil), false)
	dirs.Report(dirB, &os.PathError{Op: "write", Path: "x", Err: syscall.EIO})
	check(describeLogDirsAt(t, b.addr, 4, nil), true)
	if st, _ := dirs.State(); st != metadata.StorageOK {
		t.Fatalf("broker-wide state with one of two directories failed: %q", st)
	}
}
