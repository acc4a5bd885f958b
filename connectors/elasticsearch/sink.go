package elasticsearch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
)

// Kind is the "elasticsearch" sink kind, registered in connectors.Default.
var Kind = &connectors.Kind{
	Name: "elasticsearch",
	Doc:  "Bulk-indexes records into Elasticsearch (7.x, 8.x) or OpenSearch: index templates, data streams, _id from key or field, deletes for tombstones, external versioning, per-item retries and dead letters.",
	Spec: Spec,
	NewSink: func(name string, c connectors.Config) (connectors.Sink, error) {
		cfg, err := FromConfig(c)
		if err != nil {
			return nil, fmt.Errorf("%w: sink %q: %w", connectors.ErrConfig, name, err)
		}
		return NewSink(cfg), nil
	},
}

func init() { connectors.Default.Register(Kind) }

// Sink adapts an Indexer to the connector runtime (connectors.Sink).
// Records handed to Write are stored or dead-lettered by the time Flush
// returns nil, so the runtime commits offsets only past handled records.
type Sink struct {
	cfg Config
	ix  *Indexer
}

// NewSink returns a sink for cfg (validated at Open).
func NewSink(cfg Config) *Sink { return &Sink{cfg: cfg} }

// Indexer returns the sink's indexer (nil before Open).
func (s *Sink) Indexer() *Indexer { return s.ix }

// Open implements connectors.Sink.
func (s *Sink) Open(_ context.Context, sc connectors.SinkContext) error {
	ix, err := NewIndexer(s.cfg, sc.DeadLetter, sc.Metrics(), sc.Logger())
	if err != nil {
		return fmt.Errorf("sink %q: %w", sc.Name(), err)
	}
	s.ix = ix
	return nil
}

// Write implements connectors.Sink.
func (s *Sink) Write(ctx context.Context, rs []*kgo.Record) error { return s.ix.Add(ctx, rs) }

// Flush implements connectors.Sink.
func (s *Sink) Flush(ctx context.Context) error { return s.ix.Flush(ctx) }

// Close implements connectors.Sink.
func (s *Sink) Close() error {
	if s.ix == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.ix.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("closing bulk indexer: %w", err)
	}
	return nil
}
