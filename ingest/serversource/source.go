package serversource

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"weir/connectors"
)

// Source is a connectors.Source that runs a server of type S (a pointer
// type) between Open and Close. Its methods are safe to call from any
// goroutine.
type Source[S io.Closer] struct {
	start func(context.Context, connectors.SourceContext) (S, error)
	srv   atomic.Pointer[S]
}

// New returns a Source whose Open calls start. Contract: start builds
// the server with sc's logger and metrics and starts it; when starting
// fails it releases what it built and returns the error.
func New[S io.Closer](start func(ctx context.Context, sc connectors.SourceContext) (S, error)) *Source[S] {
	return &Source[S]{start: start}
}

// Open implements connectors.Source.
func (s *Source[S]) Open(ctx context.Context, sc connectors.SourceContext, _ map[string][]byte) error {
	srv, err := s.start(ctx, sc)
	if err != nil {
		return err
	}
	s.srv.Store(&srv)
	return nil
}

// Poll implements connectors.Source: it waits (up to a second) and
// returns buf unchanged.
func (s *Source[S]) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return buf, nil
}

// Close implements connectors.Source: it closes the server if Open
// started one.
func (s *Source[S]) Close() error {
	if srv := s.srv.Load(); srv != nil {
		return (*srv).Close()
	}
	return nil
}

// Server is the running server (the zero S, nil, before Open).
func (s *Source[S]) Server() S {
	if srv := s.srv.Load(); srv != nil {
		return *srv
	}
	var zero S
	return zero
}
