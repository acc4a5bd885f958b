package kafka

// DescribeLogDirs (key 35), versions 1-5 (Kafka 4.x's range).
//
// As Kafka's KafkaApis.handleDescribeLogDirsRequest and
// ReplicaManager.describeLogDirs: without DESCRIBE on the cluster the
// answer is CLUSTER_AUTHORIZATION_FAILED (v3+ top-level ErrorCode) and no
// directories. Otherwise one result per log directory (weir has one,
// Config.LogDir, reported as an absolute path): the partitions this
// broker holds a replica of (null Topics: all of them; else the ones
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
	"path/filepath"
	"sort"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
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
	if s.cfg.LogDir == "" {
		return resp, nil
	}
	dir, err := filepath.Abs(s.cfg.LogDir)
	if err != nil {
		dir = s.cfg.LogDir
	}
	d := kmsg.NewDescribeLogDirsResponseDir()
	d.Dir = dir
	if s.cfg.LogDirState != nil {
		if st, cause := s.cfg.LogDirState(); st == metadata.StorageFailed {
			s.log.Warn("unable to describe replica dirs", zap.String("dir", dir), zap.Error(cause))
			d.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, d)
			return resp, nil
		}
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		s.log.Warn("unable to describe replica dirs", zap.String("dir", dir), zap.Error(err))
		d.ErrorCode = kerr.KafkaStorageError.Code
		resp.Dirs = append(resp.Dirs, d)
		return resp, nil
	}
	d.TotalBytes = clampSpace(fs.Blocks, fs.Bsize)
	d.UsableBytes = clampSpace(fs.Bavail, fs.Bsize)

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
	tab := s.parts.load()
	names := make([]string, 0, len(tab))
	for name := range tab {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ts := tab[name]
		var ps []kmsg.DescribeLogDirsResponseDirTopicPartition
		for _, p := range ts.parts {
			if p == nil || !p.hosted || p.log == nil {
				continue
			}
			if wanted != nil && !wanted[name][p.index] {
				continue
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p.index
			dp.Size = p.log.Size()
			dp.OffsetLag = max(p.log.HighWatermark()-p.log.EndOffset(), 0)
			ps = append(ps, dp)
		}
		if len(ps) == 0 {
			continue
		}
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = name
		dt.Partitions = ps
		d.Topics = append(d.Topics, dt)
	}
	resp.Dirs = append(resp.Dirs, d)
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
