package http

import (
	"compress/gzip"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"weir/connectors"
)

// Options configure a Server. Zero values take the defaults.
type Options struct {
	// Addr is the listen address (":0" picks a free port).
	Addr string
	// Topic is the default topic, served at Path. Required unless
	// AllowedTopics is ["*"].
	Topic string
	// Path is where POSTs go to Topic (default "/ingest").
	Path string
	// AllowedTopics are the topics POST /topics/{topic} may name besides
	// Topic; ["*"] allows any valid topic name.
	AllowedTopics []string
	// MaxBodyBytes bounds a request body, after gzip decompression too
	// (default 10 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// MaxEventBytes bounds one event (default 1,000,000, under the
	// broker's message.max.bytes); larger events get 413.
	MaxEventBytes int
	// KeyField names a top-level field used as the record key.
	KeyField string
	// BearerToken, or Username and Password (basic auth), protect the
	// ingest paths (the health path is open). Either may be used when
	// both are set.
	BearerToken        string
	Username, Password string
	// Linger is the producer's linger (default 5ms).
	Linger time.Duration
	// MaxBufferedRecords and MaxBufferedBytes bound the events accepted
	// but not yet acknowledged by the broker (defaults 100,000 and
	// 64 MiB). A request that does not fit gets 429 (503 when the broker
	// is unreachable) with Retry-After, and nothing of it is produced.
	MaxBufferedRecords int
	MaxBufferedBytes   int64
	// AckTimeout bounds how long a request waits for the broker's
	// acknowledgements before it gets 503 (default 30s).
	AckTimeout time.Duration
	// RetryAfter is the Retry-After of 429 and 503 answers (default 1s).
	RetryAfter time.Duration
}

func (o *Options) defaults() error {
	anyTopic := len(o.AllowedTopics) == 1 && o.AllowedTopics[0] == "*"
	if o.Topic == "" && !anyTopic {
		return fmt.Errorf("%w: http endpoint needs a topic", connectors.ErrConfig)
	}
	if o.Topic != "" && !ValidTopic(o.Topic) {
		return fmt.Errorf("%w: http endpoint: topic %q is not a valid topic name", connectors.ErrConfig, o.Topic)
	}
	if o.Path == "" {
		o.Path = "/ingest"
	}
	if !strings.HasPrefix(o.Path, "/") || strings.HasPrefix(o.Path, "/topics/") || o.Path == HealthPath {
		return fmt.Errorf("%w: http endpoint: path %q must start with / and not clash with /topics/ or %s", connectors.ErrConfig, o.Path, HealthPath)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 10 << 20
	}
	if o.MaxEventBytes <= 0 {
		o.MaxEventBytes = 1_000_000
	}
	if o.Linger <= 0 {
		o.Linger = 5 * time.Millisecond
	}
	if o.MaxBufferedRecords <= 0 {
		o.MaxBufferedRecords = 100_000
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = 64 << 20
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 30 * time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = time.Second
	}
	return nil
}

// HealthPath answers 200 while the broker answers a ping, 503 otherwise.
const HealthPath = "/healthz"

// Server is the HTTP ingest endpoint, a connectors.PushSource (see the
// package documentation): Open listens, each request's events are one
// pushed batch, answered once the batch's fate is known.
type Server struct {
	o      Options
	parser Parser
	allow  map[string]bool
	any    bool
	mux    *nethttp.ServeMux

	// set by Open
	p    *connectors.Pusher
	log  *zap.Logger
	m    *connectors.Metrics
	hs   *nethttp.Server
	addr atomic.Pointer[net.Addr]
}

// New checks o and builds the server (not listening yet; Source runs it
// through the connector runtime).
func New(o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Server{o: o, parser: Parser{KeyField: o.KeyField, MaxEventBytes: o.MaxEventBytes},
		allow: map[string]bool{}, log: zap.NewNop()}
	for _, t := range o.AllowedTopics {
		if t == "*" {
			s.any = true
		} else {
			s.allow[t] = true
		}
	}
	if o.Topic != "" {
		s.allow[o.Topic] = true
	}
	s.mux = nethttp.NewServeMux()
	s.mux.HandleFunc("POST /topics/{topic}", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s.ingest(w, r, r.PathValue("topic"))
	})
	if o.Topic != "" {
		s.mux.HandleFunc("POST "+o.Path, func(w nethttp.ResponseWriter, r *nethttp.Request) { s.ingest(w, r, o.Topic) })
	}
	s.mux.HandleFunc("GET "+HealthPath, s.health)
	return s, nil
}

// Source is the connector source that runs s: a push source whose
// records the runtime produces.
func (s *Server) Source() *Source {
	return connectors.NewPushed(s, connectors.PushOptions{
		MaxRecords: s.o.MaxBufferedRecords, MaxBytes: s.o.MaxBufferedBytes, Linger: s.o.Linger})
}

// Source is the "http" kind's connectors.Source: a Server pushing
// through the runtime (Server() is the endpoint it runs).
type Source = connectors.Pushed[*Server]

// Open implements connectors.PushSource: it listens on Options.Addr and
// serves until Close.
func (s *Server) Open(_ context.Context, sc connectors.SourceContext, p *connectors.Pusher) error {
	s.p, s.log, s.m = p, sc.Logger(), sc.Metrics()
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return fmt.Errorf("http endpoint: address %q: %w", s.o.Addr, err)
	}
	s.hs = &nethttp.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: zap.NewStdLog(s.log)}
	go func() {
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			s.log.Error("http endpoint stopped serving", zap.Error(err))
		}
	}()
	a := ln.Addr()
	s.addr.Store(&a)
	s.log.Info("http ingest listening", zap.Stringer("address", a), zap.String("topic", s.o.Topic), zap.String("path", s.o.Path))
	return nil
}

// Handler is the endpoint's HTTP handler (to mount it in another server;
// requests are served only while the source is open).
func (s *Server) Handler() nethttp.Handler { return s.mux }

// Addr is the listen address (nil before Open).
func (s *Server) Addr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Close implements connectors.PushSource: it stops accepting requests
// and waits for the ones in flight, which wait for their batches' fates.
func (s *Server) Close() error {
	if s.hs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.o.AckTimeout+5*time.Second)
	defer cancel()
	return s.hs.Shutdown(ctx)
}

// response is the JSON body of every answer.
type response struct {
	Accepted int    `json:"accepted"`
	Error    string `json:"error,omitempty"`
	Line     int    `json:"line,omitempty"`
	Offset   *int64 `json:"offset,omitempty"`
	Failed   int    `json:"failed,omitempty"`
}

func (s *Server) reply(w nethttp.ResponseWriter, code int, resp response) {
	w.Header().Set("Content-Type", "application/json")
	if code == nethttp.StatusTooManyRequests || code == nethttp.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((s.o.RetryAfter+time.Second-1)/time.Second))))
	}
	if ev := rejectEvent(code); ev != "" {
		s.m.Event(ev)
	}
	w.WriteHeader(code)
	b, _ := json.Marshal(resp)
	w.Write(append(b, '\n'))
}

func (s *Server) authorized(r *nethttp.Request) bool {
	if s.o.BearerToken == "" && s.o.Username == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	if s.o.BearerToken != "" && len(h) > 7 && strings.EqualFold(h[:7], "bearer ") &&
		subtle.ConstantTimeCompare([]byte(h[7:]), []byte(s.o.BearerToken)) == 1 {
		return true
	}
	if s.o.Username != "" {
		if u, p, ok := r.BasicAuth(); ok &&
			subtle.ConstantTimeCompare([]byte(u), []byte(s.o.Username))&subtle.ConstantTimeCompare([]byte(p), []byte(s.o.Password)) == 1 {
			return true
		}
	}
	return false
}

func (s *Server) ingest(w nethttp.ResponseWriter, r *nethttp.Request, topic string) {
	if !s.authorized(r) {
		if s.o.Username != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="weir"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
		}
		s.reply(w, nethttp.StatusUnauthorized, response{Error: "missing or wrong credentials"})
		return
	}
	if !ValidTopic(topic) {
		s.reply(w, nethttp.StatusBadRequest, response{Error: fmt.Sprintf("topic %q is not a valid topic name (1 to 249 of a-z A-Z 0-9 . _ -)", topic)})
		return
	}
	if !s.any && !s.allow[topic] {
		s.reply(w, nethttp.StatusForbidden, response{Error: fmt.Sprintf("topic %q is not open to this endpoint (allowed: %s)", topic, s.allowedList())})
		return
	}
	ndjson, ok := mediaType(r.Header.Get("Content-Type"))
	if !ok {
		s.reply(w, nethttp.StatusUnsupportedMediaType, response{Error: fmt.Sprintf("Content-Type %q: want application/x-ndjson or application/json", r.Header.Get("Content-Type"))})
		return
	}
	body, code, err := s.readBody(w, r)
	if err != nil {
		s.reply(w, code, response{Error: err.Error()})
		return
	}
	var evs []Event
	if ndjson {
		evs, err = s.parser.NDJSON(body, nil)
	} else {
		evs, err = s.parser.JSON(body, nil)
	}
	if err != nil {
		resp := response{Error: err.Error()}
		var be *BodyError
		if errors.As(err, &be) {
			if be.Line > 0 {
				resp.Line = be.Line
			} else {
				resp.Offset = &be.Offset
			}
		}
		code := nethttp.StatusBadRequest
		if errors.Is(err, ErrEventTooLarge) {
			code = nethttp.StatusRequestEntityTooLarge
		}
		s.reply(w, code, resp)
		return
	}
	if len(evs) == 0 {
		s.reply(w, nethttp.StatusOK, response{})
		return
	}
	s.produce(w, r, topic, evs)
}

// produce pushes the events of one request as one batch and answers
// once the batch's fate is known: 200 when every event was stored.
func (s *Server) produce(w nethttp.ResponseWriter, r *nethttp.Request, topic string, evs []Event) {
	now := time.Now()
	recs := make([]connectors.SourceRecord, len(evs))
	for i := range evs {
		recs[i] = connectors.SourceRecord{Topic: topic, Key: evs[i].Key, Value: evs[i].Value, Timestamp: now}
	}
	done := make(chan connectors.PushResult, 1)
	// The batch does not follow the request's context: a client that goes
	// away does not cancel events already accepted.
	if err := s.p.TryPush(recs, func(res connectors.PushResult) { done <- res }); err != nil {
		switch {
		case errors.Is(err, connectors.ErrPushFull) && !s.p.BrokerDown():
			s.reply(w, nethttp.StatusTooManyRequests, response{Error: fmt.Sprintf("the endpoint's buffer is full (%d events, %d bytes waiting for the broker); retry later", s.o.MaxBufferedRecords, s.o.MaxBufferedBytes)})
		case errors.Is(err, connectors.ErrPushFull):
			s.reply(w, nethttp.StatusServiceUnavailable, response{Error: "the broker is unavailable and the endpoint's buffer is full; retry later"})
		default:
			s.reply(w, nethttp.StatusServiceUnavailable, response{Error: "the endpoint is stopping; retry later"})
		}
		return
	}
	t := time.NewTimer(s.o.AckTimeout)
	defer t.Stop()
	var res connectors.PushResult
	select {
	case res = <-done:
	case <-r.Context().Done():
		return // the client left; the events are still produced
	case <-t.C:
		// The runtime keeps events whose delivery is in doubt until the
		// broker answers rather than risk a gap.
		s.reply(w, nethttp.StatusServiceUnavailable, response{Error: fmt.Sprintf("the broker did not acknowledge the %d events within %s; some may be stored: retry the request (delivery is at least once)", len(evs), s.o.AckTimeout)})
		return
	}
	failed := res.Failed + res.DeadLettered
	if failed == 0 {
		s.reply(w, nethttp.StatusOK, response{Accepted: len(evs)})
		return
	}
	code := nethttp.StatusServiceUnavailable
	switch {
	case errors.Is(res.Err, kerr.MessageTooLarge), errors.Is(res.Err, kerr.RecordListTooLarge):
		code = nethttp.StatusRequestEntityTooLarge
	case errors.Is(res.Err, kerr.InvalidTopicException), errors.Is(res.Err, kerr.TopicAuthorizationFailed):
		code = nethttp.StatusBadRequest
	}
	s.log.Warn("events not acknowledged by the broker", zap.String("topic", topic), zap.Int("failed", failed),
		zap.Int("dead_lettered", res.DeadLettered), zap.Int("events", len(evs)), zap.Error(res.Err))
	s.reply(w, code, response{Failed: failed, Error: fmt.Sprintf("%d of %d events were not acknowledged by the broker (%v); some may be stored: retry the request (delivery is at least once)", failed, len(evs), res.Err)})
}

func (s *Server) readBody(w nethttp.ResponseWriter, r *nethttp.Request) ([]byte, int, error) {
	limit := s.o.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, nethttp.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes is larger than the limit of %d", r.ContentLength, limit)
	}
	rd := io.Reader(nethttp.MaxBytesReader(w, r.Body, limit))
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, nethttp.StatusBadRequest, fmt.Errorf("gzip body: %v", err)
		}
		defer zr.Close()
		rd = io.LimitReader(zr, limit+1)
	default:
		return nil, nethttp.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q: want gzip or none", enc)
	}
	size := 64 << 10
	if r.ContentLength > 0 {
		size = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, nethttp.StatusRequestEntityTooLarge, fmt.Errorf("body is larger than the limit of %d bytes (after decompression)", limit)
		}
		if err == io.EOF {
			return buf, 0, nil
		}
		if err != nil {
			var mbe *nethttp.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, nethttp.StatusRequestEntityTooLarge, fmt.Errorf("body is larger than the limit of %d bytes", limit)
			}
			return nil, nethttp.StatusBadRequest, fmt.Errorf("reading the body: %v", err)
		}
	}
}

// mediaType reports whether ct is NDJSON (true) or JSON (false); ok is
// false for anything else.
func mediaType(ct string) (ndjson, ok bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false, false
	}
	switch mt {
	case "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines":
		return true, true
	case "application/json":
		return false, true
	}
	return false, false
}

func (s *Server) allowedList() string {
	var l []string
	for t := range s.allow {
		l = append(l, t)
	}
	return strings.Join(l, ", ")
}

func (s *Server) health(w nethttp.ResponseWriter, r *nethttp.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	if err := s.p.Ping(ctx); err != nil {
		w.WriteHeader(nethttp.StatusServiceUnavailable)
		b, _ := json.Marshal(map[string]string{"status": "broker unavailable", "error": err.Error()})
		w.Write(append(b, '\n'))
		return
	}
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// ValidTopic reports whether t is a legal Kafka topic name.
func ValidTopic(t string) bool {
	if t == "" || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
