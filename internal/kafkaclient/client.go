package kafkaclient

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient/balancer"
	"weir/internal/kafkaclient/partition"
)

// Options are the settings of one Kafka client. Zero values take the
// defaults; only Brokers is required.
type Options struct {
	// Brokers are the seed brokers, host:port (see SplitBrokers).
	Brokers []string
	// ClientID is the client.id sent with every request ("" keeps kgo's
	// default, "kgo").
	ClientID string
	// Balancers are the group assignment strategies in order of
	// preference (balancer.Names); none means balancer.Default. Only
	// group consumers use them.
	Balancers []string

	// DialTimeout bounds one connection attempt (0: kgo's 10s).
	DialTimeout time.Duration
	// RetryTimeout bounds the retries of one request (0: kgo's default,
	// 30s for most requests).
	RetryTimeout time.Duration
	// Logger receives kgo's own logs (nil: none).
	Logger kgo.Logger

	// Security is security.protocol with its TLS and SASL settings,
	// turned into kgo.DialTLSConfig and kgo.SASL by Opts, so every client
	// weir makes gets them at once. Its secrets print as [redacted].
	Security Security

	// Extra are further options applied after the ones above: a caller's
	// own hooks and, in tests, dialers. Tuning for one use (linger,
	// topics, group) goes in New's opts instead.
	Extra []kgo.Opt
}

// ErrNoBrokers is returned by Opts and New when Options names no broker.
var ErrNoBrokers = errors.New("kafka client: no seed brokers")

// Opts returns the kgo options of o, in the order New applies them.
func (o Options) Opts() ([]kgo.Opt, error) {
	if len(o.Brokers) == 0 {
		return nil, ErrNoBrokers
	}
	bal, err := balancer.Opt(o.Balancers...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(o.Brokers...), partition.Option(), bal}
	if o.ClientID != "" {
		opts = append(opts, kgo.ClientID(o.ClientID))
	}
	if o.DialTimeout > 0 {
		opts = append(opts, kgo.DialTimeout(o.DialTimeout))
	}
	if o.RetryTimeout > 0 {
		opts = append(opts, kgo.RetryTimeout(o.RetryTimeout))
	}
	if o.Logger != nil {
		opts = append(opts, kgo.WithLogger(o.Logger))
	}
	sec, err := o.Security.opts()
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	opts = append(opts, sec...)
	return append(opts, o.Extra...), nil
}

// New returns a client built from o, then opts (which win over o's).
func New(o Options, opts ...kgo.Opt) (*kgo.Client, error) {
	base, err := o.Opts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client for %v: %w", o.Brokers, err)
	}
	return cl, nil
}
