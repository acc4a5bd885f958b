package httpin

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
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/ingest/client"
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
	// Brokers are the bootstrap brokers. Required.
	Brokers []string
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
	// ClientOpts are extra franz-go options (TLS, SASL, a dialer).
	ClientOpts []kgo.Opt
	// Logger and Metrics (nil: none, unregistered).
	Logger  *zap.Logger
	Metrics *connectors.Metrics
}

func (o *Options) defaults() error {
	anyTopic := len(o.AllowedTopics) == 1 && o.AllowedTopics[0] == "*"
	if (o.Topic == "" && !anyTopic) || len(o.Brokers) == 0 {
		return fmt.Errorf("%w: http endpoint needs a topic and brokers", connectors.ErrConfig)
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
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = connectors.NewTestMetrics("http")
	}
	return nil
}

// HealthPath answers 200 while the broker answers a ping, 503 otherwise.
const HealthPath = "/healthz"

// Server is the HTTP ingest endpoint. See the package documentation.
type Server struct {
	o      Options
	parser Parser
	cl     *kgo.Client
	log    *zap.Logger
	m      *connectors.Metrics
	allow  map[string]bool
	any    bool
	mux    *http.ServeMux
	hs     *http.Server
	ln     net.Listener

	mu       sync.Mutex
	inRecs   int
	inBytes  int64
	lastDown atomic.Int64 // unix nanos of the last failed connect or ping; 0 after a success
}

// New checks o and builds the server and its producer (not listening yet;
// see Start, or use Handler).
func New(o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Server{o: o, parser: Parser{KeyField: o.KeyField, MaxEventBytes: o.MaxEventBytes},
		log: o.Logger, m: o.Metrics, allow: map[string]bool{}}
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
	opts := append(client.ProducerOpts(o.Brokers, client.Acks(-1), kgo.NoCompression()),
		kgo.ProducerLinger(o.Linger),
		// The admission budget keeps the producer below these bounds, so
		// Produce does not block a handler for long.
		kgo.MaxBufferedRecords(o.MaxBufferedRecords+1),
		kgo.MaxBufferedBytes(int(o.MaxBufferedBytes)+o.MaxEventBytes),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.RecordDeliveryTimeout(o.AckTimeout),
		kgo.WithHooks(hooks{s}),
	)
	cl, err := kgo.NewClient(append(opts, o.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("http endpoint: producer: %w", err)
	}
	s.cl = cl
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /topics/{topic}", func(w http.ResponseWriter, r *http.Request) {
		s.ingest(w, r, r.PathValue("topic"))
	})
	if o.Topic != "" {
		s.mux.HandleFunc("POST "+o.Path, func(w http.ResponseWriter, r *http.Request) { s.ingest(w, r, o.Topic) })
	}
	s.mux.HandleFunc("GET "+HealthPath, s.health)
	return s, nil
}

// Handler is the endpoint's HTTP handler (to mount it in another server).
func (s *Server) Handler() http.Handler { return s.mux }

// Start listens on Options.Addr and serves until Close.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return fmt.Errorf("http endpoint: address %q: %w", s.o.Addr, err)
	}
	s.ln = ln
	s.hs = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: zap.NewStdLog(s.log)}
	go func() {
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http endpoint stopped serving", zap.Error(err))
		}
	}()
	s.log.Info("http ingest listening", zap.Stringer("address", ln.Addr()), zap.String("topic", s.o.Topic), zap.String("path", s.o.Path))
	return nil
}

// Addr is the listen address (nil before Start).
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops accepting requests, waits for the ones in flight (which
// wait for their acknowledgements), flushes and closes the producer.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.AckTimeout+5*time.Second)
	defer cancel()
	var err error
	if s.hs != nil {
		err = s.hs.Shutdown(ctx)
	}
	if ferr := s.cl.Flush(ctx); ferr != nil && err == nil {
		err = fmt.Errorf("http endpoint: flushing the producer: %w", ferr)
	}
	s.cl.Close()
	return err
}

// hooks track whether the broker is reachable (429 or 503).
type hooks struct{ s *Server }

func (h hooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.s.lastDown.Store(time.Now().UnixNano())
	} else {
		h.s.lastDown.Store(0)
	}
}

func (h hooks) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	h.s.lastDown.Store(0)
}

// brokerDown reports whether connecting to the broker failed in the
// last few seconds without a success since.
func (s *Server) brokerDown() bool {
	t := s.lastDown.Load()
	return t != 0 && time.Since(time.Unix(0, t)) < 10*time.Second
}

// admit reserves room for n events of size bytes, or reports false. A
// request is always admitted when nothing is in flight, so a request
// larger than the budget still gets through on an idle endpoint.
func (s *Server) admit(n int, size int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inRecs > 0 && (s.inRecs+n > s.o.MaxBufferedRecords || s.inBytes+size > s.o.MaxBufferedBytes) {
		return false
	}
	s.inRecs += n
	s.inBytes += size
	s.m.Lag.Set(float64(s.inRecs))
	return true
}

func (s *Server) release(size int64) {
	s.mu.Lock()
	s.inRecs--
	s.inBytes -= size
	s.m.Lag.Set(float64(s.inRecs))
	s.mu.Unlock()
}

// response is the JSON body of every answer.
type response struct {
	Accepted int    `json:"accepted"`
	Error    string `json:"error,omitempty"`
	Line     int    `json:"line,omitempty"`
	Offset   *int64 `json:"offset,omitempty"`
	Failed   int    `json:"failed,omitempty"`
}

func (s *Server) reply(w http.ResponseWriter, code int, resp response) {
	w.Header().Set("Content-Type", "application/json")
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((s.o.RetryAfter+time.Second-1)/time.Second))))
	}
	if ev := rejectEvent(code); ev != "" {
		s.m.Event(ev)
	}
	w.WriteHeader(code)
	b, _ := json.Marshal(resp)
	w.Write(append(b, '\n'))
}

func (s *Server) authorized(r *http.Request) bool {
	if s.o.BearerToken == "" && s.o.Username == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	if s.o.BearerToken != "" && len(h) > 7 && strings.EqualFold(h[:7], "bearer ") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[7:])), []byte(s.o.BearerToken)) == 1 {
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

func (s *Server) ingest(w http.ResponseWriter, r *http.Request, topic string) {
	if !s.authorized(r) {
		if s.o.Username != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="weir"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
		}
		s.reply(w, http.StatusUnauthorized, response{Error: "missing or wrong credentials"})
		return
	}
	if !ValidTopic(topic) {
		s.reply(w, http.StatusBadRequest, response{Error: fmt.Sprintf("topic %q is not a valid topic name (1 to 249 of a-z A-Z 0-9 . _ -)", topic)})
		return
	}
	if !s.any && !s.allow[topic] {
		s.reply(w, http.StatusForbidden, response{Error: fmt.Sprintf("topic %q is not open to this endpoint (allowed: %s)", topic, s.allowedList())})
		return
	}
	ndjson, ok := mediaType(r.Header.Get("Content-Type"))
	if !ok {
		s.reply(w, http.StatusUnsupportedMediaType, response{Error: fmt.Sprintf("Content-Type %q: want application/x-ndjson or application/json", r.Header.Get("Content-Type"))})
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
		code := http.StatusBadRequest
		if errors.Is(err, ErrEventTooLarge) {
			code = http.StatusRequestEntityTooLarge
		}
		s.reply(w, code, resp)
		return
	}
	if len(evs) == 0 {
		s.reply(w, http.StatusOK, response{})
		return
	}
	s.produce(w, r, topic, evs)
}

// produce admits, produces and waits for the broker's acknowledgement of
// every event of one request.
func (s *Server) produce(w http.ResponseWriter, r *http.Request, topic string, evs []Event) {
	var size int64
	for i := range evs {
		size += int64(len(evs[i].Value) + len(evs[i].Key))
	}
	if !s.admit(len(evs), size) {
		if s.brokerDown() {
			s.reply(w, http.StatusServiceUnavailable, response{Error: "the broker is unavailable and the endpoint's buffer is full; retry later"})
		} else {
			s.reply(w, http.StatusTooManyRequests, response{Error: fmt.Sprintf("the endpoint's buffer is full (%d events, %d bytes waiting for the broker); retry later", s.o.MaxBufferedRecords, s.o.MaxBufferedBytes)})
		}
		return
	}
	b := &batch{left: int64(len(evs)), done: make(chan struct{})}
	now := time.Now()
	recs := make([]kgo.Record, len(evs))
	for i := range evs {
		rec := &recs[i]
		rec.Topic, rec.Key, rec.Value, rec.Timestamp = topic, evs[i].Key, evs[i].Value, now
		sz := int64(len(rec.Key) + len(rec.Value))
		s.m.RecordsIn.Inc()
		s.m.BytesIn.Add(float64(sz))
		// The records' context is not the request's: a client that goes
		// away does not cancel events already accepted.
		s.cl.Produce(context.Background(), rec, func(rec *kgo.Record, err error) {
			s.release(sz)
			if err == nil {
				s.m.RecordsOut.Inc()
				s.m.BytesOut.Add(float64(sz))
			} else {
				s.m.Error(stageProduce)
			}
			b.finish(err)
		})
	}
	t := time.NewTimer(s.o.AckTimeout + time.Second)
	defer t.Stop()
	select {
	case <-b.done:
	case <-r.Context().Done():
		return // the client left; the events are still produced
	case <-t.C:
		// The producer keeps events whose delivery is in doubt (written,
		// no answer) past the delivery timeout rather than risk a gap.
		s.reply(w, http.StatusServiceUnavailable, response{Error: fmt.Sprintf("the broker did not acknowledge the %d events within %s; some may be stored: retry the request (delivery is at least once)", len(evs), s.o.AckTimeout)})
		return
	}
	if b.err == nil {
		s.reply(w, http.StatusOK, response{Accepted: len(evs)})
		return
	}
	code := http.StatusServiceUnavailable
	switch {
	case errors.Is(b.err, kerr.MessageTooLarge), errors.Is(b.err, kerr.RecordListTooLarge):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(b.err, kerr.InvalidTopicException), errors.Is(b.err, kerr.TopicAuthorizationFailed):
		code = http.StatusBadRequest
	}
	s.log.Warn("events not acknowledged by the broker", zap.String("topic", topic), zap.Int64("failed", b.failed), zap.Int("events", len(evs)), zap.Error(b.err))
	s.reply(w, code, response{Failed: int(b.failed), Error: fmt.Sprintf("%d of %d events were not acknowledged by the broker (%v); some may be stored: retry the request (delivery is at least once)", b.failed, len(evs), b.err)})
}

// batch tracks the records of one request.
type batch struct {
	left   int64
	mu     sync.Mutex
	failed int64
	err    error
	done   chan struct{}
}

func (b *batch) finish(err error) {
	if err != nil {
		b.mu.Lock()
		b.failed++
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	if atomic.AddInt64(&b.left, -1) == 0 {
		close(b.done)
	}
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	limit := s.o.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes is larger than the limit of %d", r.ContentLength, limit)
	}
	rd := io.Reader(http.MaxBytesReader(w, r.Body, limit))
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %v", err)
		}
		defer zr.Close()
		rd = io.LimitReader(zr, limit+1)
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q: want gzip or none", enc)
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
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body is larger than the limit of %d bytes (after decompression)", limit)
		}
		if err == io.EOF {
			return buf, 0, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body is larger than the limit of %d bytes", limit)
			}
			return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %v", err)
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

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	if err := s.cl.Ping(ctx); err != nil {
		s.lastDown.Store(time.Now().UnixNano())
		w.WriteHeader(http.StatusServiceUnavailable)
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
