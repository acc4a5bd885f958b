package syslog

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/connectors"
	"weir/ingest/serversource"
)

// Spec is the declared configuration of the "syslog" source kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "topic", Type: connectors.String, Required: true, Doc: "Destination topic."},
		{Name: "tcp_address", Type: connectors.String, Default: ":1514", Doc: `TCP listen address (octet-counting and LF framing); "off" disables TCP.`},
		{Name: "udp_address", Type: connectors.String, Default: ":1514", Doc: `UDP listen address (one message per datagram); "off" disables UDP.`},
		{Name: "max_message_bytes", Type: connectors.Size, Default: "64KiB", Doc: "Longer messages are cut to this size and flagged truncated."},
		{Name: "encoding", Type: connectors.String, Default: "avro", Enum: []string{"avro", "json"}, Doc: "Record values: Confluent-framed Avro (SyslogEvent schema registered as <topic>-value) or JSON."},
		{Name: "schema_registry", Type: connectors.String, Doc: "Schema registry URL (required for avro; weir run fills in its own)."},
		{Name: "brokers", Type: connectors.StringList, Doc: "Bootstrap brokers the endpoint produces to (weir run fills in its own)."},
		{Name: "linger", Type: connectors.Duration, Default: "5ms", Doc: "Producer linger."},
		{Name: "max_buffered_records", Type: connectors.Int, Default: 100000, Doc: "Messages read but not yet acknowledged by the broker; when reached, TCP connections are not read and UDP datagrams are dropped (and counted)."},
		{Name: "max_buffered_bytes", Type: connectors.Size, Default: "64MiB", Doc: "Bytes read but not yet acknowledged (same effect as max_buffered_records)."},
	},
	Validate: func(c connectors.Config) error {
		if c.String("encoding") == "avro" && c.String("schema_registry") == "" {
			return errors.New(`"schema_registry" is required when "encoding" is "avro"`)
		}
		if off(c.String("tcp_address")) && off(c.String("udp_address")) {
			return errors.New(`"tcp_address" and "udp_address" are both off: enable at least one`)
		}
		if n := c.Int("max_message_bytes"); n < 480 || n > 16<<20 {
			return errors.New(`"max_message_bytes" must be between 480 (RFC 5424's minimum) and 16MiB`)
		}
		if c.Int("max_buffered_records") < 1 {
			return errors.New(`"max_buffered_records" must be at least 1`)
		}
		return nil
	},
}

func off(addr string) bool { return addr == "" || addr == "off" }

func init() {
	connectors.Default.Register(&connectors.Kind{
		Name: "syslog",
		Doc:  "Receives syslog (RFC 5424 and RFC 3164) over TCP and UDP into a topic, one record per message.",
		Spec: Spec,
		NewSource: func(name string, cfg connectors.Config) (connectors.Source, error) {
			o, err := OptionsFromConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("syslog source %q: %w", name, err)
			}
			return NewSource(o), nil
		},
	})
}

// OptionsFromConfig builds Options from a decoded Spec config.
func OptionsFromConfig(c connectors.Config) (Options, error) {
	o := Options{
		Topic: c.String("topic"), MaxMessageBytes: int(c.Int("max_message_bytes")),
		Brokers: c.Strings("brokers"), Linger: c.Duration("linger"),
		MaxBufferedRecords: int(c.Int("max_buffered_records")), MaxBufferedBytes: c.Int("max_buffered_bytes"),
	}
	if a := c.String("tcp_address"); !off(a) {
		o.TCPAddr = a
	}
	if a := c.String("udp_address"); !off(a) {
		o.UDPAddr = a
	}
	if len(o.Brokers) == 0 {
		return o, fmt.Errorf(`%w: "brokers" names no broker`, connectors.ErrConfig)
	}
	if c.String("encoding") == "json" {
		o.Encoder = JSONEncoder{}
	} else {
		cl, err := sr.NewClient(sr.URLs(c.String("schema_registry")))
		if err != nil {
			return o, fmt.Errorf("schema registry %q: %w", c.String("schema_registry"), err)
		}
		o.Encoder = &AvroEncoder{Registry: cl}
	}
	return o, nil
}

// Source runs a syslog Server as a connector: Open starts it (with the
// connector's logger and metrics), Close stops it after the broker
// acknowledged what was read. The server produces through its own
// producer, not through Poll: syslog has no position to store, and
// messages are handed to the producer as they are read (TCP backpressure
// needs the producer's buffer to block the reading goroutine), so Poll
// returns no records. Server is the running server (nil before Open).
type Source = serversource.Source[*Server]

// NewSource returns a Source for o (started by Open).
func NewSource(o Options) *Source {
	return serversource.New(func(ctx context.Context, sc connectors.SourceContext) (*Server, error) {
		o.Logger, o.Metrics = sc.Logger(), sc.Metrics()
		srv, err := New(o)
		if err != nil {
			return nil, err
		}
		if err := srv.Start(ctx); err != nil {
			return nil, err
		}
		return srv, nil
	})
}
