package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/internal/kafkaclient"
)

// Spec is the declared configuration of the "kafka" sink kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "topic", Type: connectors.String, Required: true, Doc: "Destination topic."},
		{Name: "brokers", Type: connectors.StringList, Doc: "Bootstrap brokers of the destination cluster (weir run fills in its own)."},
		{Name: "client_config", Type: connectors.StringMap, Sensitive: true, Doc: "Kafka client properties of the destination cluster: security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.truststore.location, ssl.keystore.location, ssl.key.password, client.id (weir run fills in its broker block's client_config when brokers is its own too)."},
		{Name: "linger", Type: connectors.Duration, Default: "5ms", Doc: "Producer linger."},
		{Name: "compression", Type: connectors.String, Default: "none", Enum: []string{"none", "gzip", "snappy", "lz4", "zstd"}, Doc: "Batch compression."},
		{Name: "exactly_once", Type: connectors.Bool, Default: false, Doc: "Write the copies and commit the consumed offsets in one transaction per flush, so a read_committed consumer of topic sees each record once whatever crashes (Kafka's exactly-once; the destination must be the cluster the sink reads, i.e. brokers left to weir run)."},
	},
	Validate: func(c connectors.Config) error {
		if len(c.Strings("brokers")) == 0 {
			return fmt.Errorf(`"brokers" must name at least one broker`)
		}
		_, err := clientOf(c)
		return err
	},
}

func init() {
	connectors.Default.Register(&connectors.Kind{
		Name: "kafka",
		Doc:  "Copies the records of its topics to a topic of a Kafka-compatible cluster.",
		Spec: Spec,
		NewSink: func(name string, cfg connectors.Config) (connectors.Sink, error) {
			codec, err := kafkaclient.ParseCompression(cfg.String("compression"))
			if err != nil {
				return nil, fmt.Errorf("%w: kafka sink %q: %v", connectors.ErrConfig, name, err)
			}
			client, err := clientOf(cfg)
			if err != nil {
				return nil, fmt.Errorf("%w: kafka sink %q: %v", connectors.ErrConfig, name, err)
			}
			return New(Options{Topic: cfg.String("topic"), Client: client,
				Opts: []kgo.Opt{kgo.ProducerLinger(cfg.Duration("linger")), kgo.ProducerBatchCompression(codec)}})
		},
	})
}

// clientOf is the destination's client settings: brokers and
// client_config (Kafka client properties).
func clientOf(c connectors.Config) (kafkaclient.Options, error) {
	o := kafkaclient.Options{Brokers: c.Strings("brokers")}
	props := c.StringMap("client_config")
	if len(props) == 0 {
		return o, nil
	}
	set, ignored, err := kafkaclient.ParseProperties(props)
	if err != nil {
		return o, fmt.Errorf("client_config: %w", err)
	}
	if len(ignored) > 0 {
		return o, fmt.Errorf("client_config: weir does not read %v (it holds security.protocol, sasl.*, ssl.* and client.id)", ignored)
	}
	if len(set.Brokers) > 0 {
		return o, fmt.Errorf("client_config: bootstrap.servers: name the brokers with brokers = [...]")
	}
	return set.Options(o), nil
}

// Options configure a Sink.
type Options struct {
	Topic string
	// Client is how the producer connects to the destination cluster.
	Client kafkaclient.Options
	Opts   []kgo.Opt // producer tuning, applied last
}

// Sink copies records to Options.Topic.
type Sink struct {
	opts Options
	cl   *kgo.Client
	sc   connectors.SinkContext
	// txn: the runtime's transactional producer under exactly-once
	// (UseProducer), instead of cl.
	txn connectors.Producer

	mu     sync.Mutex
	failed []failure
	err    error
}

// failure is a record whose copy was not produced, and why.
type failure struct {
	orig *kgo.Record
	err  error
}

// New returns a Sink; the producer is created by Open.
func New(o Options) (*Sink, error) {
	if o.Topic == "" || len(o.Client.Brokers) == 0 {
		return nil, fmt.Errorf("%w: kafka sink needs a topic and brokers", connectors.ErrConfig)
	}
	return &Sink{opts: o}, nil
}

// Open creates the producer (acks=all, weir's Java-compatible
// partitioner: a key lands where Kafka's Java client would put it).
func (s *Sink) Open(_ context.Context, sc connectors.SinkContext) error {
	s.sc = sc
	if s.txn != nil {
		return nil
	}
	opts := append(kafkaclient.Producer(kafkaclient.AcksAll, kgo.NoCompression()), kgo.DefaultProduceTopic(s.opts.Topic))
	cl, err := kafkaclient.New(s.opts.Client, append(opts, s.opts.Opts...)...)
	if err != nil {
		return fmt.Errorf("kafka sink: %w", err)
	}
	s.cl = cl
	return nil
}

func (s *Sink) copyOf(r *kgo.Record) *kgo.Record {
	return &kgo.Record{Topic: s.opts.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
}

// UseProducer implements connectors.TransactionalSink: under
// exactly-once the copies go through the runtime's transactional client
// (the destination must be the cluster the sink reads), and a copy that
// fails fails the flush, which aborts the transaction; one the
// destination refuses for good (too large, invalid) stops the sink, as
// writing around it would drop it from the transaction's output.
func (s *Sink) UseProducer(p connectors.Producer) { s.txn = p }

// produce starts producing the copy of orig.
func (s *Sink) produce(ctx context.Context, orig *kgo.Record) {
	p := connectors.Producer(s.cl)
	if s.txn != nil {
		p = s.txn
	}
	p.Produce(ctx, s.copyOf(orig), func(_ *kgo.Record, err error) {
		if err == nil {
			return
		}
		s.mu.Lock()
		s.failed = append(s.failed, failure{orig, err})
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	})
}

// refused reports whether the destination refuses a record for good:
// producing it again cannot succeed.
func refused(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.InvalidTimestamp)
}

// Write starts producing copies of rs.
func (s *Sink) Write(ctx context.Context, rs []*kgo.Record) error {
	for _, r := range rs {
		s.produce(ctx, r)
	}
	return nil
}

// Flush waits for every copy to be acknowledged. A copy the destination
// refused for good (too large, invalid) is produced again alone, since
// the refusal may be its batch's; refused again, the record goes to the
// dead-letter topic. Other failed copies are produced again and reported
// as retriable.
func (s *Sink) Flush(ctx context.Context) error {
	if s.txn != nil {
		return s.flushTxn()
	}
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%w: kafka sink flush: %v", connectors.ErrRetriable, err)
	}
	s.mu.Lock()
	failed, err := s.failed, s.err
	s.failed, s.err = nil, nil
	s.mu.Unlock()
	again := 0
	for _, f := range failed {
		if refused(f.err) {
			err := s.cl.ProduceSync(ctx, s.copyOf(f.orig)).FirstErr()
			if err == nil {
				continue
			}
			if refused(err) {
				s.sc.DeadLetter(f.orig, fmt.Errorf("%w: topic %s refused the record: %v", connectors.ErrBadRecord, s.opts.Topic, err))
				continue
			}
		}
		s.produce(ctx, f.orig)
		again++
	}
	if again == 0 {
		return nil
	}
	return fmt.Errorf("%w: kafka sink: %d records to %s failed (%v); producing them again", connectors.ErrRetriable, again, s.opts.Topic, err)
}

// flushTxn reports the copies that failed in the transaction (the
// runtime has flushed its client before).
func (s *Sink) flushTxn() error {
	s.mu.Lock()
	failed, err := s.failed, s.err
	s.failed, s.err = nil, nil
	s.mu.Unlock()
	if len(failed) == 0 {
		return nil
	}
	if refused(err) {
		return fmt.Errorf("kafka sink: topic %s refused a record (%v): under exactly_once the sink stops rather than leave it out", s.opts.Topic, err)
	}
	return fmt.Errorf("%w: kafka sink: %d records to %s failed (%v); aborting the transaction", connectors.ErrRetriable, len(failed), s.opts.Topic, err)
}

// Close closes the producer.
func (s *Sink) Close() error {
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}
