package syslog

import (
	"errors"
	"fmt"

	"weir/connectors"
	enc "weir/connectors/internal/event"
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
		connectors.RegistryConfigField,
		{Name: "brokers", Type: connectors.StringList, Doc: "Not used: the connector runtime produces the messages to its brokers (accepted so that older pipelines load)."},
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
			srv, err := New(o)
			if err != nil {
				return nil, fmt.Errorf("syslog source %q: %w", name, err)
			}
			return srv.Source(), nil
		},
	})
}

// OptionsFromConfig builds Options from a decoded Spec config.
func OptionsFromConfig(c connectors.Config) (Options, error) {
	o := Options{
		Topic: c.String("topic"), MaxMessageBytes: int(c.Int("max_message_bytes")),
		Linger:             c.Duration("linger"),
		MaxBufferedRecords: int(c.Int("max_buffered_records")), MaxBufferedBytes: c.Int("max_buffered_bytes"),
	}
	if a := c.String("tcp_address"); !off(a) {
		o.TCPAddr = a
	}
	if a := c.String("udp_address"); !off(a) {
		o.UDPAddr = a
	}
	e, err := enc.New[Event](c.String("encoding"), c.String("schema_registry"), c.StringMap(connectors.RegistryConfigSetting))
	o.Encoder = e
	return o, err
}
