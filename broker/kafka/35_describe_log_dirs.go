package kafka

// DescribeLogDirs (key 35), versions 1-5 (Kafka 4.x's range).
//
// As Kafka's KafkaApis.handleDescribeLogDirsRequest and
// ReplicaManager.describeLogDirs: without DESCRIBE on the cluster the
// answer is CLUSTER_AUTHORIZATION_FAILED (v3+ top-level ErrorCode) and no
// directories. Otherwise one result per log directory (Config.LogDirs,
// Kafka's log.dirs, each reported as an absolute path): the partitions of
// it this broker holds a replica of (null Topics: all of them; else the ones
// asked for that it holds), each with its size (bytes of its segment
// files), its offset lag max(high watermark - log end offset, 0) — 0 for
// current replicas, as Kafka reports them — and IsFutureKey false (weir
// never moves a replica between directories); topics left without
// partitions are not listed. v4+ adds the file system's total and usable
// bytes (statfs). A failed directory (broker/logdir: EIO, EROFS, a log
// taken offline) is KAFKA_STORAGE_ERROR with no topics, as Kafka answers
// for an offline directory; a full one is described normally (Kafka has
// no such state; its usable bytes tell it). v5's IsCordoned is false:
// weir has no cordoned directories.

import (
	"sort"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/logdir"
	"weir/broker/metadata"
)

func init() { register(kmsg.DescribeLogDirs.Int16(), 1, 5, handleDescribeLogDirs) }

func handleDescribeLogDirs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.authorize(r, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var wanted map[string]map[int32]bool // nil: all
	if req.Topics != nil {
		wanted = make(map[string]map[int32]bool, len(req.Topics))
		for _, t := range req.Topics {
			if wanted[t.Topic] == nil {
				wanted[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				wanted[t.Topic][p] = true
			}
		}
	}
	// The partitions of each directory.
	byDir := make(map[string][]kmsg.DescribeLogDirsResponseDirTopic, len(s.cfg.LogDirs))
	loc, _ := s.logs.(dirLocator)
	tab := s.parts.load()
	names := make([]string, 0, len(tab))
	for name := range tab {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ts := tab[name]
		var last *kmsg.DescribeLogDirsResponseDirTopic
		lastDir := ""
		for _, p := range ts.parts {
			if p == nil || !p.hosted || p.log == nil {
				continue
			}
			if wanted != nil && !wanted[name][p.index] {
				continue
			}
			dir := ""
			if loc != nil {
				dir, _ = loc.DirOf(name, p.index)
			}
			if dir == "" && len(s.cfg.LogDirs) == 1 {
				dir = s.cfg.LogDirs[0]
			}
			if dir == "" {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.index
			dp.Size = p.log.Size()
			dp.OffsetLag = max(p.log.HighWatermark()-p.log.EndOffset(), 0)
			if last == nil || lastDir != dir {
				ts := byDir[dir]
				i := len(ts) - 1
				if i < 0 || ts[i].Topic != name {
					dt := kmsg.NewDescribeLogDirsResponseDirTopic()
					dt.Topic = name
					byDir[dir] = append(ts, dt)
					i = len(ts)
				}
				last, lastDir = &byDir[dir][i], dir
			}
			last.Partitions = append(last.Partitions, dp)
		}
	}
	for _, dir := range s.cfg.LogDirs {
		d := kmsg.NewDescribeLogDirsResponseDir()
		d.Dir = logdir.Abs(dir)
		if s.cfg.LogDirState != nil {
			if st, cause := s.cfg.LogDirState(dir); st == metadata.StorageFailed {
				s.log.Warn("unable to describe replica dirs", zap.String("dir", d.Dir), zap.Error(cause))
				d.ErrorCode = kerr.KafkaStorageError.Code
				resp.Dirs = append(resp.Dirs, d)
				continue
			}
		}
		var fs syscall.Statfs_t
		if err := syscall.Statfs(d.Dir, &fs); err != nil {
			s.log.Warn("unable to describe replica dirs", zap.String("dir", d.Dir), zap.Error(err))
			d.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, d)
			continue
		}
		d.TotalBytes = clampSpace(fs.Blocks, fs.Bsize)
		d.UsableBytes = clampSpace(fs.Bavail, fs.Bsize)
		d.Topics = byDir[dir]
		resp.Dirs = append(resp.Dirs, d)
	}
	return resp, nil
}

// clampSpace is blocks*size, or the largest int64 where that overflows
// (Kafka's adjustForLargeFileSystems).
func clampSpace(blocks uint64, size int64) int64 {
	if size <= 0 {
		return 0
	}
	if blocks > uint64(1<<63-1)/uint64(size) {
		return 1<<63 - 1
	}
	return int64(blocks) * size
}
