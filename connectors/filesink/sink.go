package filesink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
)

// Spec is the declared configuration of the "file" sink kind.
var Spec = connectors.Spec{
	Fields: []connectors.Field{
		{Name: "path", Type: connectors.String, Required: true, Doc: "File the records are appended to (created with its folders)."},
		{Name: "format", Type: connectors.String, Default: FormatJSON, Enum: Formats, Doc: "json: one JSON value per line (Avro decoded); raw: value bytes; envelope: JSON with topic, partition, offset, key, timestamp and value."},
		{Name: "fsync", Type: connectors.Bool, Default: true, Doc: "Sync the file at every flush, before offsets are committed."},
		{Name: "schema_registry", Type: connectors.String, Doc: "Schema registry URL, to decode Avro values (weir run fills in its own)."},
		connectors.RegistryConfigField,
	},
}

func init() {
	connectors.Default.Register(&connectors.Kind{
		// "file" is the file tail source's kind name in the one registry
		// namespace; pipelines look sink "file" up as "file-sink".
		Name: KindName,
		Doc:  "Appends the records of its topics to a file, one line each.",
		Spec: Spec,
		NewSink: func(name string, cfg connectors.Config) (connectors.Sink, error) {
			return New(Options{Path: cfg.String("path"), Format: cfg.String("format"), Fsync: cfg.Bool("fsync"),
				SchemaRegistry: cfg.String("schema_registry"), RegistryConfig: cfg.StringMap(connectors.RegistryConfigSetting)})
		},
	})
}

// KindName is the registry name of the file sink (sink "file" in HCL).
const KindName = "file-sink"

// Options configure a file Sink.
type Options struct {
	Path           string
	Format         string
	Fsync          bool
	SchemaRegistry string
	// RegistryConfig is the registry client settings
	// (schema_registry_config; kafkaclient.OpenRegistry).
	RegistryConfig map[string]string
	// Out, when set, replaces the file (the stdout sink); Path is then
	// unused and Fsync ignored.
	Out io.Writer
}

// Sink appends records to a file (or Options.Out).
type Sink struct {
	opts Options
	w    *Writer
	f    *os.File
	out  io.Writer
	sc   connectors.SinkContext
}

// New returns a Sink; the file is opened by Open.
func New(o Options) (*Sink, error) {
	if o.Format == "" {
		o.Format = FormatJSON
	}
	w, err := NewWriter(o.Format, o.SchemaRegistry, o.RegistryConfig)
	if err != nil {
		return nil, err
	}
	return &Sink{opts: o, w: w}, nil
}

// Open opens (creates) the file for appending.
func (s *Sink) Open(_ context.Context, sc connectors.SinkContext) error {
	s.sc = sc
	if s.opts.Out != nil {
		s.out = s.opts.Out
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.opts.Path), 0o755); err != nil {
		return fmt.Errorf("file sink: setting \"path\": %w", err)
	}
	f, err := os.OpenFile(s.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("file sink: setting \"path\": %w", err)
	}
	s.f, s.out = f, f
	return nil
}

// Write formats rs into the buffer; undecodable records go to the
// dead-letter topic.
func (s *Sink) Write(ctx context.Context, rs []*kgo.Record) error {
	for _, r := range rs {
		if err := s.w.Append(ctx, r); err != nil {
			if errors.Is(err, connectors.ErrBadRecord) {
				s.sc.DeadLetter(r, err)
				continue
			}
			return err
		}
	}
	return nil
}

// Flush writes the buffered lines and syncs the file.
func (s *Sink) Flush(context.Context) error {
	if b := s.w.Buffered(); len(b) > 0 {
		if _, err := s.out.Write(b); err != nil {
			// A short append cannot be taken back; the lines are written
			// again after a retry or restart (at-least-once).
			return fmt.Errorf("%w: writing %s: %v", connectors.ErrRetriable, s.opts.Path, err)
		}
		s.w.Reset()
	}
	if s.f != nil && s.opts.Fsync {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("%w: syncing %s: %v", connectors.ErrRetriable, s.opts.Path, err)
		}
	}
	return nil
}

// Close closes the file.
func (s *Sink) Close() error {
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}
