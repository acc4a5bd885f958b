package conformance

import (
	"context"
	"sync/atomic"

	"weir/connectors"
)

// source wraps a kind's Source to count Open and Close and to report
// the result of Open and of the first Poll; it forwards the optional
// Committer and unwraps to the kind's source.
type source struct {
	connectors.Source
	opens, closes atomic.Int32
	opened        chan error // Open's result, if not nil (buffered)
	polled        chan error // the first Poll's error, if not nil (buffered)
	polls         atomic.Int32
}

func (s *source) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	out, err := s.Source.Poll(ctx, buf)
	if s.polled != nil && s.polls.Add(1) == 1 {
		s.polled <- err
	}
	return out, err
}

func (s *source) Open(ctx context.Context, sc connectors.SourceContext, restored map[string][]byte) error {
	s.opens.Add(1)
	err := s.Source.Open(ctx, sc, restored)
	if s.opened != nil {
		s.opened <- err
	}
	return err
}

func (s *source) Close() error {
	s.closes.Add(1)
	return s.Source.Close()
}

// Unwrap lets the runtime see the kind's source (a push source).
func (s *source) Unwrap() connectors.Source { return s.Source }

func (s *source) Committed(positions map[string][]byte) {
	if c, ok := s.Source.(connectors.Committer); ok {
		c.Committed(positions)
	}
}

// sink wraps a kind's Sink like source; it forwards the optional
// PartitionAware.
type sink struct {
	connectors.Sink
	opens, closes atomic.Int32
	opened        chan error
}

func (s *sink) Open(ctx context.Context, sc connectors.SinkContext) error {
	s.opens.Add(1)
	err := s.Sink.Open(ctx, sc)
	if s.opened != nil {
		s.opened <- err
	}
	return err
}

func (s *sink) Close() error {
	s.closes.Add(1)
	return s.Sink.Close()
}

func (s *sink) Assigned(m map[string][]int32) {
	if p, ok := s.Sink.(connectors.PartitionAware); ok {
		p.Assigned(m)
	}
}

func (s *sink) Revoked(m map[string][]int32) {
	if p, ok := s.Sink.(connectors.PartitionAware); ok {
		p.Revoked(m)
	}
}
