package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
)

// Log is the registry's durable record log (the _schemas topic).
//
// Contract: Append writes recs in order, durably (acks=all for Kafka),
// and returns the offset of the last one. Consume delivers every record
// from the start of the log, in offset order, each once, to fn on the
// calling goroutine, until ctx ends (then it returns ctx's error) or the
// log fails. Records given to fn are owned by fn. Append and Consume may
// run concurrently; Close ends both.
type Log interface {
	Append(ctx context.Context, recs ...Record) (last int64, err error)
	Consume(ctx context.Context, fn func(r Record, offset int64)) error
	Close() error
}

// ErrClosed is returned by a closed Log.
var ErrClosed = errors.New("registry log closed")

// MemLog is an in-memory Log for tests and single-process use.
type MemLog struct {
	mu     sync.Mutex
	cond   *sync.Cond
	recs   []Record
	closed bool
	// FailAppend, when set, makes Append fail with it (fault tests).
	FailAppend error
}

// NewMemLog returns an empty MemLog.
func NewMemLog() *MemLog {
	l := &MemLog{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// Append implements Log.
func (l *MemLog) Append(ctx context.Context, recs ...Record) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.FailAppend != nil {
		return 0, l.FailAppend
	}
	l.recs = append(l.recs, recs...)
	l.cond.Broadcast()
	return int64(len(l.recs) - 1), nil
}

// Len returns the number of records appended (the end offset).
func (l *MemLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// Consume implements Log.
func (l *MemLog) Consume(ctx context.Context, fn func(Record, int64)) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	next := 0
	for {
		l.mu.Lock()
		for next >= len(l.recs) && !l.closed && ctx.Err() == nil {
			l.cond.Wait()
		}
		if ctx.Err() != nil {
			l.mu.Unlock()
			return ctx.Err()
		}
		if l.closed {
			l.mu.Unlock()
			return ErrClosed
		}
		batch := l.recs[next:]
		l.mu.Unlock()
		for _, r := range batch {
			fn(r, int64(next))
			next++
		}
	}
}

// Close implements Log.
func (l *MemLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.cond.Broadcast()
	return nil
}

// KafkaConfig configures a KafkaLog.
type KafkaConfig struct {
	// Client is how the log's clients connect: bootstrap brokers, TLS,
	// SASL (and, in tests, Extra options).
	Client kafkaclient.Options
	// Topic is the log topic (default "_schemas").
	Topic string
	// CreateTopic is called when the broker cannot create the topic with
	// CreateTopics (a broker without that API); nil means rely on topic
	// auto-creation, which does not set cleanup.policy=compact.
	CreateTopic func(ctx context.Context, topic string, configs map[string]string) error
	// Logger receives warnings (nil: none).
	Logger *zap.Logger
}

// DefaultTopic is Confluent's topic name (kafkastore.topic).
const DefaultTopic = "_schemas"

// KafkaLog is a Log on a one-partition compacted topic, written and read
// with franz-go, so it works against weir and against Apache Kafka.
type KafkaLog struct {
	topic    string
	producer *kgo.Client
	client   kafkaclient.Options
	log      *zap.Logger

	mu       sync.Mutex
	consumer *kgo.Client
}

// OpenKafka connects to the brokers and makes sure the topic exists (one
// partition, cleanup.policy=compact), creating it if missing.
func OpenKafka(ctx context.Context, cfg KafkaConfig) (*KafkaLog, error) {
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	co := cfg.Client
	producer, err := kafkaclient.New(co, append(kafkaclient.Producer(kafkaclient.AcksAll, kgo.NoCompression()),
		kgo.DefaultProduceTopic(cfg.Topic), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1024))...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	l := &KafkaLog{topic: cfg.Topic, producer: producer, log: lg, client: co}
	if err := l.ensureTopic(ctx, cfg.CreateTopic); err != nil {
		producer.Close()
		return nil, err
	}
	return l, nil
}

var compactConfigs = map[string]string{"cleanup.policy": "compact"}

func (l *KafkaLog) ensureTopic(ctx context.Context, fallback func(context.Context, string, map[string]string) error) error {
	adm := kadm.NewClient(l.producer)
	cfgs := map[string]*string{}
	for k, v := range compactConfigs {
		cfgs[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, 1, -1, cfgs, l.topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("schema registry: creating topic %s: %w", l.topic, ctx.Err())
	}
	if fallback != nil {
		ferr := fallback(ctx, l.topic, compactConfigs)
		if ferr == nil {
			return nil
		}
		l.log.Warn("creating the schemas topic failed", zap.String("topic", l.topic), zap.Error(ferr))
	}
	l.log.Warn("CreateTopics failed: relying on topic auto-creation, so the schemas topic may not be compacted",
		zap.String("topic", l.topic), zap.Error(err))
	return nil
}

// Append implements Log: one synchronous produce with acks=all.
func (l *KafkaLog) Append(ctx context.Context, recs ...Record) (int64, error) {
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: l.topic, Partition: 0, Key: r.Key, Value: r.Value}
	}
	res := l.producer.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		return 0, fmt.Errorf("writing %d record(s) to %s: %w", len(recs), l.topic, err)
	}
	var last int64 = -1
	for _, r := range res {
		if r.Record.Offset > last {
			last = r.Record.Offset
		}
	}
	return last, nil
}

// Consume implements Log.
func (l *KafkaLog) Consume(ctx context.Context, fn func(Record, int64)) error {
	cl, err := kafkaclient.New(l.client,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.consumer = cl
	l.mu.Unlock()
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if fs.IsClientClosed() {
			return ErrClosed
		}
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				l.log.Warn("reading the schemas topic", zap.String("topic", t), zap.Int32("partition", p), zap.Error(err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			fn(Record{Key: r.Key, Value: r.Value}, r.Offset)
		})
	}
}

// Close implements Log.
func (l *KafkaLog) Close() error {
	l.producer.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.consumer != nil {
		l.consumer.Close()
	}
	return nil
}
