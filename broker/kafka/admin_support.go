package kafka

// Support for the admin API handlers (CreateTopics 19, DeleteTopics 20,
// DeleteRecords 21, InitProducerId 22, DescribeConfigs 32, AlterConfigs 33,
// CreatePartitions 37, IncrementalAlterConfigs 44, DescribeCluster 60).
//
// Per-server admin state lives in adminSupports (keyed by *Server, created
// on first use) so the server core needs no fields for it:
//
//   - a mutex that serializes the admin changes which read, modify and
//     write a topic's config overrides (AlterConfigs, IncrementalAlterConfigs),
//     so two concurrent alters cannot lose each other's change;
//   - the producer-id allocator behind InitProducerId. Its ids are reserved
//     in blocks from a txn.BlockStore: the one given to SetProducerIDStore,
//     else a txn.FileBlockStore in the data directory when the log manager
//     or metadata store says where that is (an optional DataDir() string
//     method), else a clock-seeded in-memory store (ids unique across
//     restarts only while the clock does not go back; a warning is logged).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"weir/broker/metadata"
	"weir/broker/topicconfig"
	"weir/broker/txn"
)

type adminSupport struct {
	alterMu sync.Mutex // serializes topic-config read-modify-write

	pidMu    sync.Mutex
	pidStore txn.BlockStore
	pids     *txn.Allocator
}

var adminSupports sync.Map // *Server -> *adminSupport

func (s *Server) admin() *adminSupport {
	if v, ok := adminSupports.Load(s); ok {
		return v.(*adminSupport)
	}
	v, loaded := adminSupports.LoadOrStore(s, &adminSupport{})
	if !loaded {
		go func() {
			<-s.ctx.Done()
			adminSupports.Delete(s)
		}()
	}
	return v.(*adminSupport)
}

// ErrProducerIDsStarted is returned by SetProducerIDStore after the first
// producer id was handed out.
var ErrProducerIDsStarted = errors.New("kafka: producer ids already in use")

// SetProducerIDStore makes InitProducerId reserve producer ids from store
// (for a single node, txn.OpenFileBlockStore on the data directory). Call it
// before serving clients.
func (s *Server) SetProducerIDStore(store txn.BlockStore) error {
	a := s.admin()
	a.pidMu.Lock()
	defer a.pidMu.Unlock()
	if a.pids != nil {
		return ErrProducerIDsStarted
	}
	a.pidStore = store
	return nil
}

// dataDirer is the optional capability of a log manager or metadata store
// to say where the data directory is.
type dataDirer interface{ DataDir() string }

// producerIDs returns the server's producer-id allocator, creating it on
// first use.
func (s *Server) producerIDs() (*txn.Allocator, error) {
	a := s.admin()
	a.pidMu.Lock()
	defer a.pidMu.Unlock()
	if a.pids != nil {
		return a.pids, nil
	}
	store := a.pidStore
	if store == nil {
		var dir string
		if d, ok := s.logs.(dataDirer); ok {
			dir = d.DataDir()
		} else if d, ok := s.meta.(dataDirer); ok {
			dir = d.DataDir()
		}
		if dir != "" {
			fs, err := txn.OpenFileBlockStore(s.fs, dir)
			if err != nil {
				return nil, err
			}
			store = fs
		} else {
			s.log.Warn("no producer-id store configured and the data directory is unknown: producer ids are seeded from the clock and not persisted")
			store = &clockBlockStore{now: s.now}
		}
	}
	a.pids = txn.NewAllocator(store, txn.DefaultBlockSize)
	return a.pids, nil
}

// clockBlockStore reserves ids starting at the current time in
// microseconds, never below what it handed out before: unique across
// restarts as long as the clock does not go back and fewer than a million
// ids are handed out per second.
type clockBlockStore struct {
	now  func() time.Time
	mu   sync.Mutex
	next int64
}

func (c *clockBlockStore) Reserve(size int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := max(c.next, c.now().UnixMicro())
	c.next = first + size
	return first, nil
}

// ---- errors ----

// kafkaError is a Kafka error code with the message for the response.
type kafkaError struct {
	code int16
	msg  string
}

func kafkaErr(e *kerr.Error, format string, args ...any) *kafkaError {
	return &kafkaError{code: e.Code, msg: fmt.Sprintf(format, args...)}
}

func (e *kafkaError) Error() string { return e.msg }

// controllerCtx bounds a controller change by the request's TimeoutMs
// (none when it is 0 or less), as Kafka's controller APIs do.
func controllerCtx(r *Request, timeoutMillis int32) (context.Context, context.CancelFunc) {
	if timeoutMillis <= 0 {
		return r.Ctx, func() {}
	}
	return context.WithTimeout(r.Ctx, time.Duration(timeoutMillis)*time.Millisecond)
}

// controllerErr is the answer to a controller change that failed as a
// whole: REQUEST_TIMED_OUT when the request's time ran out, else
// UNKNOWN_SERVER_ERROR; the message says what was being done.
func controllerErr(doing string, err error) *kafkaError {
	if errors.Is(err, context.DeadlineExceeded) {
		return kafkaErr(kerr.RequestTimedOut, "%s: %v", doing, err)
	}
	return kafkaErr(kerr.UnknownServerError, "%s: %v", doing, err)
}

// msgPtr returns the message for an optional ErrorMessage field.
func (e *kafkaError) msgPtr() *string {
	if e == nil || e.msg == "" {
		return nil
	}
	m := e.msg
	return &m
}

func (e *kafkaError) codeOrZero() int16 {
	if e == nil {
		return 0
	}
	return e.code
}

// metadataError maps a metadata.Store error to a Kafka error.
func metadataError(err error) *kafkaError {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, metadata.ErrTopicExists):
		return kafkaErr(kerr.TopicAlreadyExists, "%v", err)
	case errors.Is(err, metadata.ErrUnknownTopic):
		return kafkaErr(kerr.UnknownTopicOrPartition, "%v", err)
	case errors.Is(err, metadata.ErrInvalidTopic):
		return kafkaErr(kerr.InvalidTopicException, "%v", err)
	case errors.Is(err, metadata.ErrInvalidPartitions):
		return kafkaErr(kerr.InvalidPartitions, "%v", err)
	case errors.Is(err, metadata.ErrInvalidReplicationFactor):
		return kafkaErr(kerr.InvalidReplicationFactor, "%v", err)
	case errors.Is(err, metadata.ErrNoBrokers):
		return kafkaErr(kerr.BrokerNotAvailable, "%v", err)
	case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
		return kafkaErr(kerr.InvalidReplicaAssignment, "%v", err)
	}
	return kafkaErr(kerr.UnknownServerError, "%v", err)
}

// configError maps a topicconfig error to a Kafka error.
func configError(err error) *kafkaError {
	if err == nil {
		return nil
	}
	if errors.Is(err, topicconfig.ErrInvalidRequest) {
		return kafkaErr(kerr.InvalidRequest, "%v", err)
	}
	return kafkaErr(kerr.InvalidConfig, "%v", err)
}

// ---- config resources ----

// Kafka's config resource types.
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
)

// checkBrokerResource checks the name of a BROKER resource to describe:
// this node's id, or "" (the cluster-wide default).
func (s *Server) checkBrokerResource(name string) *kafkaError {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || int32(id) != s.cfg.NodeID {
		return kafkaErr(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", s.cfg.NodeID, name)
	}
	return nil
}

// topicOverrides returns the current overrides of topic name from img.
func topicOverrides(img *metadata.Image, name string) (map[string]string, bool) {
	t, ok := img.Topic(name)
	if !ok {
		return nil, false
	}
	return t.Configs, true
}

// logAdminChange logs a successful admin change.
func (s *Server) logAdminChange(what string, r *Request, fields ...zap.Field) {
	s.log.Info(what, append(fields, zap.String("client_id", r.ClientID), zap.String("remote", r.Remote))...)
}

// ---- alters: shared by AlterConfigs (33) and IncrementalAlterConfigs (44) ----

// alterTopicConfigs replaces topic's overrides with what next computes
// from the current ones, after validating the result; with validateOnly it
// only validates. The read-modify-write is serialized with other alters.
// The partition table applies the new configuration to the topic's logs
// (log.SetConfig) when the metadata change is applied, before this returns.
func (s *Server) alterTopicConfigs(r *Request, topic string, validateOnly bool, next func(cur map[string]string) (map[string]string, *kafkaError)) *kafkaError {
	a := s.admin()
	a.alterMu.Lock()
	defer a.alterMu.Unlock()
	cur, ok := topicOverrides(s.meta.Image(), topic)
	if !ok {
		return kafkaErr(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	want, e := next(maps.Clone(cur))
	if e != nil {
		return e
	}
	res, err := s.cfg.BrokerConfig.Resolve(want)
	if err != nil {
		return configError(err)
	}
	if validateOnly {
		return nil
	}
	if _, err := s.meta.AlterTopicConfig(r.Ctx, strings.Clone(topic), res.Overrides()); err != nil {
		return metadataError(err)
	}
	s.logAdminChange("topic configs altered", r, zap.String("topic", topic), zap.Any("configs", res.Overrides()))
	return nil
}

// partitionResultsByTopic turns the per-partition results of a
// controller decision (ElectLeaders, AlterPartitionReassignments) into a
// response's topics, one per topic in the order of first appearance:
// topic is called at each new topic, partition with each result, the
// index of its topic, its error code (codes; UNKNOWN_SERVER_ERROR for an
// outcome not there) and message (the result's, else messages', nil when
// none). It returns the successful partitions ("topic-partition") for
// the admin log.
func partitionResultsByTopic[O ~string](results []metadata.PartitionResult[O], codes map[O]*kerr.Error, messages map[O]string,
	topic func(string), partition func(ti int, res metadata.PartitionResult[O], code int16, msg *string)) []string {
	var done []string
	idx := map[string]int{}
	for _, res := range results {
		ti, ok := idx[res.Topic]
		if !ok {
			ti = len(idx)
			idx[res.Topic] = ti
			topic(res.Topic)
		}
		if res.Outcome == "" {
			done = append(done, fmt.Sprintf("%s-%d", res.Topic, res.Partition))
			partition(ti, res, 0, nil)
			continue
		}
		code := codes[res.Outcome]
		if code == nil {
			code = kerr.UnknownServerError
		}
		var msg *string
		if m := cmp.Or(res.Message, messages[res.Outcome]); m != "" {
			msg = &m
		}
		partition(ti, res, code.Code, msg)
	}
	return done
}
