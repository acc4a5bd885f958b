package kafkaclient

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient/partition"
)

// DefaultBrokers is the bootstrap list when neither a flag nor the
// environment names one.
const DefaultBrokers = "127.0.0.1:9092"

// BrokersEnv is the environment variable consulted for the default
// bootstrap list.
const BrokersEnv = "WEIR_BROKERS"

// ErrInvalid is wrapped by every parse error of this package.
var ErrInvalid = errors.New("invalid client setting")

// BrokersDefault returns $WEIR_BROKERS if set, else DefaultBrokers.
func BrokersDefault() string {
	if v := strings.TrimSpace(os.Getenv(BrokersEnv)); v != "" {
		return v
	}
	return DefaultBrokers
}

// SplitBrokers splits a comma-separated host:port list, dropping blanks.
func SplitBrokers(s string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --brokers %q names no broker (want host:port[,host:port...])", ErrInvalid, s)
	}
	return out, nil
}

// Acks is a parsed --acks setting: 0, 1 or AcksAll.
type Acks int16

// AcksAll is acks=all (-1): every in-sync replica has the record.
const AcksAll Acks = -1

// ParseAcks accepts 0, 1, all or -1.
func ParseAcks(s string) (Acks, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	case "all", "-1":
		return -1, nil
	}
	return 0, fmt.Errorf("%w: --acks %q: want 0, 1, all or -1", ErrInvalid, s)
}

// String returns 0, 1 or all.
func (a Acks) String() string {
	if a == -1 {
		return "all"
	}
	return fmt.Sprint(int16(a))
}

// Opts returns the kgo options for a: acks=all keeps kgo's idempotent
// producer; 0 and 1 disable idempotence, which Kafka requires for them.
func (a Acks) Opts() []kgo.Opt {
	switch a {
	case 0:
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}
	case 1:
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}
	}
	return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
}

// ParseCompression accepts none, gzip, snappy, lz4 or zstd.
func ParseCompression(s string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("%w: --compression %q: want none, gzip, snappy, lz4 or zstd", ErrInvalid, s)
}

// Producer returns the options every weir producer adds to its client's:
// acks (and the idempotence that goes with them), the batch codec, and
// topic auto-creation through Metadata as Kafka's Java producer asks for
// (the broker decides, per auto.create.topics.enable), and weir's
// partitioner (which New sets anyway; here too for producers built by
// tests with kgo.NewClient). Callers append their own tuning (linger,
// buffer sizes, ...).
func Producer(acks Acks, codec kgo.CompressionCodec) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.AllowAutoTopicCreation(),
		partition.Option(),
		kgo.ProducerBatchCompression(codec),
	}
	return append(opts, acks.Opts()...)
}
