package kafka

// Wiring of the group coordinator (weir/broker/group) into the server.
//
// The coordinator is created on the first group request (FindCoordinator,
// JoinGroup, OffsetCommit, ...): it loads __consumer_offsets when the
// topic exists, or creates it (compacted, offsets.topic.num.partitions
// partitions) when a group first needs it. It stops when the server shuts
// down. Its settings are broker configs with Kafka's names
// (group.initial.rebalance.delay.ms, group.min.session.timeout.ms,
// group.max.session.timeout.ms, group.max.size, offset.metadata.max.bytes,
// offsets.retention.minutes, offsets.retention.check.interval.ms,
// offsets.topic.num.partitions, offsets.topic.segment.bytes), read from
// Config.BrokerConfig when it knows them, or set with SetGroupConfig.
//
// Its Storage is the offsets topic's partition logs: appends go through
// produceTo, the path Produce uses (validation, append, high watermark,
// metrics); loading reads the log from its start to its end.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/group"
	"weir/broker/log"
	"weir/broker/metadata"
	"weir/broker/replica"
)

// ErrGroupsStarted is returned by SetGroupConfig after the coordinator
// started.
var ErrGroupsStarted = errors.New("kafka: group coordinator already started")

// SetGroupConfig sets the group coordinator's configuration, overriding
// the broker configs; call it before the first group request.
func (s *Server) SetGroupConfig(cfg group.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return s.groupCoord.setConfig(cfg, ErrGroupsStarted)
}

// groups returns the server's coordinator, starting it on first use.
func (s *Server) groups() (*group.Coordinator, error) {
	return s.groupCoord.get(s, "group coordinator", group.ErrClosed, func(set *group.Config) (*group.Coordinator, error) {
		cfg := s.groupConfigFromBroker()
		if set != nil {
			cfg = *set
		}
		return group.NewCoordinator(cfg, offsetsStorage{s, cfg}, group.Options{
			Now: s.now, Logger: s.log.Named("group"), Topics: s.groupTopics,
		})
	}, nil)
}

// brokerSetting calls set with the value of the LONG broker config name
// when it is set; a value that is not a number is logged ("ignoring bad
// <what> setting") and skipped. The coordinators read their settings
// with it.
func (s *Server) brokerSetting(what, name string, set func(int64)) {
	v, _, ok := s.cfg.BrokerConfig.Value(name)
	if !ok {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		s.log.Warn("ignoring bad "+what+" setting", zap.String("name", name), zap.String("value", v))
		return
	}
	set(n)
}

// groupConfigFromBroker reads the coordinator's settings from the broker
// configuration (Kafka's defaults for what it does not know).
func (s *Server) groupConfigFromBroker() group.Config {
	cfg := group.DefaultConfig()
	num := func(name string, set func(int64)) { s.brokerSetting("group", name, set) }
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	num(group.SettingInitialRebalanceDelayMs, func(n int64) { cfg.InitialRebalanceDelay = ms(n) })
	num(group.SettingMinSessionTimeoutMs, func(n int64) { cfg.MinSessionTimeout = ms(n) })
	num(group.SettingMaxSessionTimeoutMs, func(n int64) { cfg.MaxSessionTimeout = ms(n) })
	num(group.SettingMaxSize, func(n int64) { cfg.MaxSize = int(n) })
	num(group.SettingOffsetMetadataMaxBytes, func(n int64) { cfg.OffsetMetadataMaxBytes = int(n) })
	num(group.SettingOffsetsRetentionMinutes, func(n int64) { cfg.OffsetsRetention = time.Duration(n) * time.Minute })
	num(group.SettingOffsetsRetentionCheckMs, func(n int64) { cfg.OffsetsRetentionCheckInterval = ms(n) })
	num(group.SettingOffsetsTopicNumPartitions, func(n int64) { cfg.OffsetsTopicPartitions = int32(n) })
	num(group.SettingOffsetsTopicSegmentBytes, func(n int64) { cfg.OffsetsTopicSegmentBytes = n })
	num(group.SettingConsumerHeartbeatIntervalMs, func(n int64) { cfg.ConsumerHeartbeatInterval = ms(n) })
	num(group.SettingConsumerSessionTimeoutMs, func(n int64) { cfg.ConsumerSessionTimeout = ms(n) })
	num(group.SettingConsumerMaxSize, func(n int64) { cfg.ConsumerMaxSize = int(n) })
	if v, _, ok := s.cfg.BrokerConfig.Value(group.SettingConsumerAssignors); ok {
		if as, err := parseAssignors(v); err != nil {
			s.log.Warn("ignoring bad group setting", zap.String("name", group.SettingConsumerAssignors), zap.String("value", v), zap.Error(err))
		} else {
			cfg.ConsumerAssignors = as
		}
	}
	cfg.MaxRecordBytes = int(s.cfg.BrokerConfig.MessageMaxBytes())
	return cfg
}

// parseAssignors reads group.consumer.assignors: a comma list of Kafka's
// assignor names or class names.
func parseAssignors(v string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(v, ",") {
		switch a = strings.TrimSpace(a); a {
		case "":
		case group.AssignorUniform, "org.apache.kafka.coordinator.group.assignor.UniformAssignor":
			out = append(out, group.AssignorUniform)
		case group.AssignorRange, "org.apache.kafka.coordinator.group.assignor.RangeAssignor":
			out = append(out, group.AssignorRange)
		default:
			return nil, fmt.Errorf("unknown assignor %q (weir has %s and %s)", a, group.AssignorUniform, group.AssignorRange)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no assignor")
	}
	return out, nil
}

// groupTopics is the cluster's topics for the consumer protocol's
// assignors: the metadata image now.
func (s *Server) groupTopics() group.Topics { return imageTopics{s.meta.Image()} }

type imageTopics struct{ im *metadata.Image }

func (t imageTopics) Version() int64 { return t.im.Offset }

func (t imageTopics) Topic(name string) (group.TopicInfo, bool) {
	tp, ok := t.im.Topic(name)
	if !ok {
		return group.TopicInfo{}, false
	}
	return group.TopicInfo{Name: tp.Name, ID: group.TopicID(tp.ID), Partitions: int32(len(tp.Partitions))}, true
}

func (t imageTopics) TopicByID(id group.TopicID) (group.TopicInfo, bool) {
	tp, ok := t.im.TopicByID(metadata.UUID(id))
	if !ok {
		return group.TopicInfo{}, false
	}
	return group.TopicInfo{Name: tp.Name, ID: id, Partitions: int32(len(tp.Partitions))}, true
}

func (t imageTopics) Names() []string {
	ts := t.im.Topics()
	out := make([]string, len(ts))
	for i, tp := range ts {
		out[i] = tp.Name
	}
	return out
}

// clientHost is the ClientHost Kafka reports for a connection: "/" + IP.
func clientHost(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return "/" + h
	}
	return "/" + remote
}

// offsetsStorage is __consumer_offsets over this server's logs.
type offsetsStorage struct {
	s   *Server
	cfg group.Config
}

var (
	_ group.PartitionLeader = offsetsStorage{}
	_ group.LogCommitter    = offsetsStorage{}
)

func (o offsetsStorage) Partitions() int32 {
	if t, ok := o.s.meta.Image().Topic(group.OffsetsTopic); ok {
		return int32(len(t.Partitions))
	}
	return 0
}

func (o offsetsStorage) CreateTopic(n int32) (int32, error) {
	s, seg := o.s, o.cfg.OffsetsTopicSegmentBytes
	rf := int16(min(3, len(s.meta.Image().LiveBrokers())))
	t, err := s.meta.CreateTopic(s.ctx, metadata.TopicSpec{
		Name:              group.OffsetsTopic,
		Partitions:        n,
		ReplicationFactor: max(rf, 1),
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.FormatInt(seg, 10),
		},
	})
	switch {
	case err == nil:
		s.log.Debug("created the offsets topic", zap.String("topic", group.OffsetsTopic), zap.Int32("partitions", n))
		return int32(len(t.Partitions)), nil
	case errors.Is(err, metadata.ErrTopicExists):
		if n := o.Partitions(); n > 0 {
			return n, nil
		}
	}
	return 0, err
}

func (o offsetsStorage) Append(p int32, batch []byte) error {
	return o.s.appendInternal(group.OffsetsTopic, p, batch, 5*time.Second)
}

// appendInternal appends a coordinator's batch to partition p of an
// internal topic through produceTo (the path Produce uses) and waits
// until it is as durable as an acks=all produce (up to timeout: Kafka's
// offsets.commit.timeout.ms, 5 s, for both coordinators).
func (s *Server) appendInternal(topic string, p int32, batch []byte, timeout time.Duration) error {
	ts, part := s.parts.lookup(topic, p)
	if part == nil {
		return fmt.Errorf("%s-%d is not hosted here", topic, p)
	}
	var sp kmsg.ProduceResponseTopicPartition
	end, pe := s.produceTo(9, -1, ts, part, batch, s.now().UnixMilli(), &sp)
	if pe != nil {
		return fmt.Errorf("appending to %s-%d: %w (%s)", topic, p, pe.err, pe.msg)
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	if err := part.rep.WaitCommitted(ctx, end, int(ts.cfg.MinInsyncReplicas)); err != nil {
		return fmt.Errorf("appending to %s-%d: %w: %w", topic, p, replicaErr(err), err)
	}
	return nil
}

// Leads reports whether this broker leads partition p of the offsets
// topic (group.PartitionLeader: only those are loaded).
func (o offsetsStorage) Leads(p int32) bool {
	_, part := o.s.parts.lookup(group.OffsetsTopic, p)
	if part == nil || part.rep == nil {
		return false
	}
	role, _, _ := part.rep.State()
	return role == replica.RoleLeader
}

// WaitLogCommitted returns once partition p of the offsets topic is
// committed to its current end (group.LogCommitter), while this broker
// leads it.
func (o offsetsStorage) WaitLogCommitted(ctx context.Context, p int32) error {
	_, part := o.s.parts.lookup(group.OffsetsTopic, p)
	if part == nil || part.log == nil || part.rep == nil {
		return fmt.Errorf("%s-%d is not hosted here", group.OffsetsTopic, p)
	}
	return part.rep.WaitCommitted(ctx, part.log.EndOffset(), 0)
}

func (o offsetsStorage) Replay(p int32, fn func([]byte) error) error {
	return o.s.replayInternal(group.OffsetsTopic, p, fn)
}

// replayInternal calls fn with the record batches of partition p of an
// internal topic, from its log start to its end, in order.
func (s *Server) replayInternal(topic string, p int32, fn func([]byte) error) error {
	_, part := s.parts.lookup(topic, p)
	if part == nil || part.log == nil {
		return fmt.Errorf("%s-%d has no log on this broker", topic, p)
	}
	l := part.log
	off, end := l.StartOffset(), l.EndOffset()
	for off < end {
		sec, err := l.Read(off, 1<<20, end)
		if err != nil {
			return err
		}
		b, err := sec.Bytes()
		sec.Release()
		if err != nil {
			return err
		}
		if len(b) == 0 {
			break
		}
		next := off
		for rest := b; len(rest) > 0; {
			h, err := log.ParseBatchHeader(rest)
			if err != nil {
				return err
			}
			next = h.LastOffset() + 1
			if int64(len(rest)) < h.Size() {
				break
			}
			rest = rest[h.Size():]
		}
		if err := fn(b); err != nil {
			return err
		}
		if next <= off {
			return fmt.Errorf("%s-%d: no progress reading at offset %d", topic, p, off)
		}
		off = next
	}
	return nil
}
