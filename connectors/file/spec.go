package file

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"weir/connectors"
	enc "weir/connectors/internal/event"
)

// Spec is the declared configuration of the "file" source kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "topic", Type: connectors.String, Required: true, Doc: "Destination topic."},
		{Name: "include", Type: connectors.StringList, Required: true, Doc: "Glob patterns of files to tail (filepath.Match syntax, ** for any directories)."},
		{Name: "exclude", Type: connectors.StringList, Doc: "Glob patterns of files to skip; a pattern without / matches base names (\"*.gz\")."},
		{Name: "start_at", Type: connectors.String, Default: "beginning", Enum: []string{"beginning", "end"}, Doc: "Where to start reading files found at the first start of the connector (files that appear later are always read from the beginning)."},
		{Name: "rescan_interval", Type: connectors.Duration, Default: "10s", Doc: "How often the globs are expanded again to find new and rotated files."},
		{Name: "poll_interval", Type: connectors.Duration, Default: "100ms", Doc: "How long to wait when every file is at its end before reading again."},
		{Name: "fingerprint_bytes", Type: connectors.Int, Default: 1024, Doc: "Files are identified by a hash of this many first bytes; shorter files by device and inode."},
		{Name: "max_line_bytes", Type: connectors.Size, Default: "256KiB", Doc: "Longer lines (and multiline events) are cut to this size and flagged truncated."},
		{Name: "multiline_pattern", Type: connectors.String, Doc: "Regular expression for multiline joining (empty: every line is an event)."},
		{Name: "multiline_mode", Type: connectors.String, Default: "start", Enum: []string{"start", "continue"}, Doc: "start: the pattern matches an event's first line; continue: it matches continuation lines."},
		{Name: "multiline_negate", Type: connectors.Bool, Default: false, Doc: "Invert the multiline pattern."},
		{Name: "multiline_flush_timeout", Type: connectors.Duration, Default: "1s", Doc: "A pending multiline event is emitted after this long without a new line."},
		{Name: "multiline_max_lines", Type: connectors.Int, Default: 500, Doc: "A multiline event ends after this many lines."},
		{Name: "close_inactive", Type: connectors.Duration, Default: "5m", Doc: "Close files without new data for this long (reopened on change)."},
		{Name: "rotate_wait", Type: connectors.Duration, Default: "5s", Doc: "Keep reading a file renamed away or deleted for this long after its last data."},
		{Name: "encoding", Type: connectors.String, Default: "avro", Enum: []string{"avro", "json"}, Doc: "Record values: Confluent-framed Avro (schema registered as <topic>-value) or JSON."},
		{Name: "schema_registry", Type: connectors.String, Doc: "Schema registry URL (required for avro)."},
		connectors.RegistryConfigField,
		{Name: "fields", Type: connectors.StringMap, Doc: "Static fields added to every event."},
		{Name: "host", Type: connectors.String, Doc: "Host name written in events (default: this machine's)."},
	},
	Validate: func(c connectors.Config) error {
		if c.String("encoding") == "avro" && c.String("schema_registry") == "" {
			return errors.New(`"schema_registry" is required when "encoding" is "avro"`)
		}
		if p := c.String("multiline_pattern"); p != "" {
			if _, err := regexp.Compile(p); err != nil {
				return fmt.Errorf(`"multiline_pattern": %v`, err)
			}
		}
		if c.Int("fingerprint_bytes") < 16 || c.Int("fingerprint_bytes") > 1<<20 {
			return errors.New(`"fingerprint_bytes" must be between 16 and 1048576`)
		}
		if c.Int("max_line_bytes") < 64 {
			return errors.New(`"max_line_bytes" must be at least 64`)
		}
		for _, k := range []string{"include", "exclude"} {
			for _, p := range c.Strings(k) {
				if _, err := compileGlob(p); err != nil {
					return fmt.Errorf("%q: %w", k, err)
				}
			}
		}
		return nil
	},
}

func init() {
	connectors.Default.Register(&connectors.Kind{
		Name: "file",
		Doc:  "Tails files matched by globs into a topic, one record per line or multiline event.",
		Spec: Spec,
		NewSource: func(name string, cfg connectors.Config) (connectors.Source, error) {
			o, err := OptionsFromConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("file source %q: %w", name, err)
			}
			return New(o)
		},
	})
}

// Options configure a file Source; see Spec for each setting's meaning.
type Options struct {
	Topic            string
	Include, Exclude []string
	StartAtEnd       bool
	RescanInterval   time.Duration
	PollInterval     time.Duration
	FingerprintBytes int
	MaxLineBytes     int
	// Multiline joining (nil pattern: off).
	MultilinePattern      *regexp.Regexp
	MultilineContinue     bool
	MultilineNegate       bool
	MultilineFlushTimeout time.Duration
	MultilineMaxLines     int
	CloseInactive         time.Duration
	RotateWait            time.Duration
	Encoder               Encoder
	Fields                map[string]string
	Host                  string
	// BatchRecords bounds the records returned by one Poll (default 8192).
	BatchRecords int
}

// OptionsFromConfig builds Options from a decoded Spec config.
func OptionsFromConfig(c connectors.Config) (Options, error) {
	o := Options{
		Topic: c.String("topic"), Include: c.Strings("include"), Exclude: c.Strings("exclude"),
		StartAtEnd: c.String("start_at") == "end", RescanInterval: c.Duration("rescan_interval"),
		PollInterval: c.Duration("poll_interval"), FingerprintBytes: int(c.Int("fingerprint_bytes")),
		MaxLineBytes: int(c.Int("max_line_bytes")), MultilineContinue: c.String("multiline_mode") == "continue",
		MultilineNegate: c.Bool("multiline_negate"), MultilineFlushTimeout: c.Duration("multiline_flush_timeout"),
		MultilineMaxLines: int(c.Int("multiline_max_lines")), CloseInactive: c.Duration("close_inactive"),
		RotateWait: c.Duration("rotate_wait"), Fields: c.StringMap("fields"), Host: c.String("host"),
	}
	if p := c.String("multiline_pattern"); p != "" {
		o.MultilinePattern = regexp.MustCompile(p) // validated by Spec
	}
	e, err := enc.New[Event](c.String("encoding"), c.String("schema_registry"), c.StringMap(connectors.RegistryConfigSetting))
	o.Encoder = e
	return o, err
}

func (o *Options) defaults() error {
	if o.Topic == "" || len(o.Include) == 0 || o.Encoder == nil {
		return fmt.Errorf("%w: file source needs a topic, include globs and an encoder", connectors.ErrConfig)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.RescanInterval, 10*time.Second)
	def(&o.PollInterval, 100*time.Millisecond)
	def(&o.MultilineFlushTimeout, time.Second)
	def(&o.CloseInactive, 5*time.Minute)
	def(&o.RotateWait, 5*time.Second)
	if o.FingerprintBytes <= 0 {
		o.FingerprintBytes = 1024
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = 256 << 10
	}
	if o.MultilineMaxLines <= 0 {
		o.MultilineMaxLines = 500
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 8192
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
	}
	return nil
}
