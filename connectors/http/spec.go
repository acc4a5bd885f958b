package http

import (
	"errors"
	"fmt"

	"weir/connectors"
)

// Spec is the declared configuration of the "http" source kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "topic", Type: connectors.String, Required: true, Doc: "Destination topic, served at path (and at /topics/<topic>)."},
		{Name: "address", Type: connectors.String, Default: ":8088", Doc: "Listen address."},
		{Name: "path", Type: connectors.String, Default: "/ingest", Doc: "Path that POSTs to topic."},
		{Name: "topics", Type: connectors.StringList, Doc: `Other topics POST /topics/<topic> may name; ["*"] allows any.`},
		{Name: "key_field", Type: connectors.String, Doc: "Top-level event field used as the record key (empty: no key)."},
		{Name: "max_body_bytes", Type: connectors.Size, Default: "10MiB", Doc: "Larger request bodies (after gzip decompression too) get 413."},
		{Name: "max_event_bytes", Type: connectors.Size, Default: 1000000, Doc: "Larger events get 413."},
		{Name: "bearer_token", Type: connectors.String, Doc: "If set, requests need Authorization: Bearer <token>."},
		{Name: "username", Type: connectors.String, Doc: "If set, requests may use basic auth with username and password."},
		{Name: "password", Type: connectors.String, Doc: "Basic auth password."},
		{Name: "brokers", Type: connectors.StringList, Doc: "Not used: the connector runtime produces the events to its brokers (accepted so that older pipelines load)."},
		{Name: "linger", Type: connectors.Duration, Default: "5ms", Doc: "Producer linger."},
		{Name: "max_buffered_records", Type: connectors.Int, Default: 100000, Doc: "Events accepted but not yet acknowledged; a request that does not fit gets 429 (503 if the broker is unreachable)."},
		{Name: "max_buffered_bytes", Type: connectors.Size, Default: "64MiB", Doc: "Bytes accepted but not yet acknowledged (same effect)."},
		{Name: "ack_timeout", Type: connectors.Duration, Default: "30s", Doc: "A request whose events are not all acknowledged in this time gets 503."},
	},
	Validate: func(c connectors.Config) error {
		if !ValidTopic(c.String("topic")) {
			return fmt.Errorf(`"topic" %q is not a valid topic name`, c.String("topic"))
		}
		if (c.String("username") == "") != (c.String("password") == "") {
			return errors.New(`"username" and "password" go together`)
		}
		if c.Int("max_event_bytes") > c.Int("max_body_bytes") {
			return errors.New(`"max_event_bytes" is larger than "max_body_bytes"`)
		}
		if c.Int("max_buffered_records") < 1 {
			return errors.New(`"max_buffered_records" must be at least 1`)
		}
		return nil
	},
}

func init() {
	connectors.Default.Register(&connectors.Kind{
		Name: "http",
		Doc:  "Accepts NDJSON or JSON arrays over HTTP POST into a topic, one record per event, answering after the broker acknowledged them.",
		Spec: Spec,
		NewSource: func(name string, cfg connectors.Config) (connectors.Source, error) {
			o, err := OptionsFromConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("http source %q: %w", name, err)
			}
			srv, err := New(o)
			if err != nil {
				return nil, fmt.Errorf("http source %q: %w", name, err)
			}
			return srv.Source(), nil
		},
	})
}

// OptionsFromConfig builds Options from a decoded Spec config.
func OptionsFromConfig(c connectors.Config) (Options, error) {
	return Options{
		Addr: c.String("address"), Topic: c.String("topic"), Path: c.String("path"), AllowedTopics: c.Strings("topics"),
		KeyField: c.String("key_field"), MaxBodyBytes: c.Int("max_body_bytes"), MaxEventBytes: int(c.Int("max_event_bytes")),
		BearerToken: c.String("bearer_token"), Username: c.String("username"), Password: c.String("password"),
		Linger: c.Duration("linger"), MaxBufferedRecords: int(c.Int("max_buffered_records")),
		MaxBufferedBytes: c.Int("max_buffered_bytes"), AckTimeout: c.Duration("ack_timeout"),
	}, nil
}
