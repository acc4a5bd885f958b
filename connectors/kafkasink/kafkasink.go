package kafkasink

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
)

// Spec is the declared configuration of the "kafka" sink kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "topic", Type: connectors.String, Required: true, Doc: "Destination topic."},
		{Name: "brokers", Type: connectors.StringList, Doc: "Bootstrap brokers of the destination cluster (weir run fills in its own)."},
		{Name: "linger", Type: connectors.Duration, Default: "5ms", Doc: "Producer linger."},
		{Name: "compression", Type: connectors.String, Default: "none", Enum: []string{"none", "gzip", "snappy", "lz4", "zstd"}, Doc: "Batch compression."},
	},
	Validate: func(c connectors.Config) error {
		if len(c.Strings("brokers")) == 0 {
			return fmt.Errorf(`"brokers" must name at least one broker`)
		}
		return nil
	},
}

func init() {
	connectors.Default.Register(&connectors.Kind{
		Name: "kafka",
		Doc:  "Copies the records of its topics to a topic of a Kafka-compatible cluster.",
		Spec: Spec,
		NewSink: func(name string, cfg connectors.Config) (connectors.Sink, error) {
			return New(Options{Topic: cfg.String("topic"), Brokers: cfg.Strings("brokers"),
				Opts: []kgo.Opt{kgo.ProducerLinger(cfg.Duration("linger")), kgo.ProducerBatchCompression(codec(cfg.String("compression")))}})
		},
	})
}

func codec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// Options configure a Sink.
type Options struct {
	Topic   string
	Brokers []string
	Opts    []kgo.Opt
}

// Sink copies records to Options.Topic.
type Sink struct {
	opts Options
	cl   *kgo.Client

	mu     sync.Mutex
	failed []*kgo.Record
	err    error
}

// New returns a Sink; the producer is created by Open.
func New(o Options) (*Sink, error) {
	if o.Topic == "" || len(o.Brokers) == 0 {
		return nil, fmt.Errorf("%w: kafka sink needs a topic and brokers", connectors.ErrConfig)
	}
	return &Sink{opts: o}, nil
}

// Open creates the producer.
func (s *Sink) Open(_ context.Context, _ connectors.SinkContext) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.opts.Brokers...), kgo.DefaultProduceTopic(s.opts.Topic),
		kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks())}, s.opts.Opts...)...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	s.cl = cl
	return nil
}

func (s *Sink) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	s.failed = append(s.failed, r)
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Write starts producing copies of rs.
func (s *Sink) Write(ctx context.Context, rs []*kgo.Record) error {
	for _, r := range rs {
		s.cl.Produce(ctx, &kgo.Record{Topic: s.opts.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}, s.promise)
	}
	return nil
}

// Flush waits for every copy to be acknowledged; failed ones are
// produced again and reported as retriable.
func (s *Sink) Flush(ctx context.Context) error {
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%w: kafka sink flush: %v", connectors.ErrRetriable, err)
	}
	s.mu.Lock()
	failed, err := s.failed, s.err
	s.failed, s.err = nil, nil
	s.mu.Unlock()
	if len(failed) == 0 {
		return nil
	}
	for _, r := range failed {
		s.cl.Produce(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}, s.promise)
	}
	return fmt.Errorf("%w: kafka sink: %d records to %s failed (%v); producing them again", connectors.ErrRetriable, len(failed), s.opts.Topic, err)
}

// Close closes the producer.
func (s *Sink) Close() error {
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}
