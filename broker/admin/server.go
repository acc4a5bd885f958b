package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"weir/broker/httpsec"
)

// DefaultAddr is the admin listener's address when none is configured.
const DefaultAddr = ":9644"

// Config configures a Server.
type Config struct {
	// Addr is the listen address, host:port; "" means DefaultAddr and
	// port 0 picks a free port (see Server.Addr).
	Addr string
	// Registry receives the Go and process collectors and is served at
	// /metrics. Nil means a fresh registry.
	Registry *prometheus.Registry
	// Ready reports readiness for /readyz: nil means ready, an error means
	// not ready and its text is the reason. Nil Ready means always ready.
	Ready func() error
	// Logger logs listener errors; nil means no logging.
	Logger *zap.Logger
	// Security is the listener's TLS and authentication (nil: plain
	// HTTP, no authentication); see httpsec.ParseAdmin.
	Security *httpsec.Security
}

// Server is the admin HTTP server. Its methods are safe for concurrent use.
type Server struct {
	ln     net.Listener
	scheme string
	mux    *http.ServeMux
	srv    *http.Server
	reg    *prometheus.Registry
	ready  func() error
	logger *zap.Logger

	mu      sync.Mutex
	started bool
	done    chan struct{} // closed when Serve returns
}

// New binds cfg.Addr and builds the server; it does not serve until Start.
// It registers the Go and process collectors into cfg.Registry; a registry
// that already holds them is accepted.
func New(cfg Config) (*Server, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("admin: registering runtime collectors: %w", err)
			}
		}
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	var ln net.Listener
	var err error
	if cfg.Security != nil {
		ln, err = cfg.Security.Listen(addr)
	} else {
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("admin: listening on %s (set --admin-addr to a free address): %w", addr, err)
	}
	s := &Server{
		ln:     ln,
		scheme: cfg.Security.Scheme(),
		mux:    http.NewServeMux(),
		reg:    reg,
		ready:  cfg.Ready,
		logger: lg,
		done:   make(chan struct{}),
	}
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		Registry:          reg, // exposes promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	s.mux.HandleFunc("GET /readyz", s.serveReady)
	// Go's profiler (CPU, heap, goroutines, mutex/block, execution trace):
	// the admin listener is an operator interface, like /metrics.
	s.mux.HandleFunc("/debug/pprof/", pprof.Index)
	s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s.srv = &http.Server{
		Handler:           cfg.Security.Wrap(s.mux, httpsec.Options{}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(lg.Named("admin.http")),
	}
	return s, nil
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.ready != nil {
		if err := s.ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
	}
	_, _ = w.Write([]byte("ready\n"))
}

// Addr returns the bound address (host:port), with the real port when the
// configured port was 0.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the listener's base URL: http(s)://host:port.
func (s *Server) URL() string { return s.scheme + "://" + s.Addr() }

// Registry returns the registry served at /metrics, for components that
// register their own collectors.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Handle mounts h at pattern (net/http.ServeMux syntax, e.g.
// "GET /v1/topics/{name}"). It may be called before or after Start. It
// panics if pattern conflicts with a registered one, as ServeMux does.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Start serves in a background goroutine. Calling it twice is a no-op.
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return
	}
	s.started = true
	s.logger.Info("admin HTTP listening", zap.String("addr", s.Addr()), zap.String("scheme", s.scheme))
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("admin HTTP server stopped", zap.String("addr", s.Addr()), zap.Error(err))
		}
	}()
}

// Shutdown stops accepting connections and waits for in-flight requests to
// finish or ctx to end, whichever comes first; connections still open then
// are closed. It returns ctx's error if it had to cut requests short. On a
// server never started it just releases the listener.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return s.ln.Close()
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}
