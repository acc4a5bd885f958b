package admin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"weir/internal/testkit"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func TestMetricsServesRegistryAndRuntime(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weir_test_requests_total", Help: "test counter",
	}, []string{"api"})
	reg.MustRegister(c)
	c.WithLabelValues("produce").Add(3)

	s := startServer(t, Config{Registry: reg})
	if strings.HasSuffix(s.Addr(), ":0") {
		t.Fatalf("Addr() = %s, want the bound port", s.Addr())
	}
	code, body := get(t, "http://"+s.Addr()+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics status %d", code)
	}
	for _, want := range []string{
		`weir_test_requests_total{api="produce"} 3`,
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestHealthzAndReadyz(t *testing.T) {
	var notReady atomic.Value
	notReady.Store("log recovery in progress")
	s := startServer(t, Config{Ready: func() error {
		if r := notReady.Load().(string); r != "" {
			return errors.New(r)
		}
		return nil
	}})
	base := "http://" + s.Addr()

	if code, body := get(t, base+"/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "log recovery in progress") {
		t.Fatalf("/readyz while not ready = %d %q, want 503 with the reason", code, body)
	}
	notReady.Store("")
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz when ready = %d %q", code, body)
	}
}

func TestHandleMountsExtraHandlers(t *testing.T) {
	s := startServer(t, Config{})
	s.Handle("GET /v1/hello/{name}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello "+r.PathValue("name"))
	}))
	if code, body := get(t, "http://"+s.Addr()+"/v1/hello/weir"); code != 200 || body != "hello weir" {
		t.Fatalf("mounted handler = %d %q", code, body)
	}
	if code, _ := get(t, "http://"+s.Addr()+"/nope"); code != 404 {
		t.Fatalf("unknown path = %d, want 404", code)
	}
}

func TestPprofServed(t *testing.T) {
	s := startServer(t, Config{})
	base := "http://" + s.Addr()
	if code, body := get(t, base+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Fatalf("/debug/pprof/ = %d %q", code, body)
	}
	code, body := get(t, base+"/debug/pprof/goroutine?debug=1")
	if code != 200 || !strings.Contains(body, "goroutine profile:") {
		t.Fatalf("/debug/pprof/goroutine = %d %q", code, body)
	}
	if code, body := get(t, base+"/debug/pprof/profile?seconds=1"); code != 200 || len(body) == 0 {
		t.Fatalf("/debug/pprof/profile = %d, %d bytes", code, len(body))
	}
}

func TestSharedRegistryTwice(t *testing.T) {
	// Two servers (e.g. a restart in one process) may share a registry.
	reg := prometheus.NewRegistry()
	startServer(t, Config{Registry: reg})
	startServer(t, Config{Registry: reg})
}

func TestAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = New(Config{Addr: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("New on a busy address: err = %v, want one naming the address", err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s := startServer(t, Config{})
	s.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "finished")
	}))
	type result struct {
		code int
		body string
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr() + "/slow")
		if err != nil {
			res <- result{-1, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		res <- result{resp.StatusCode, string(b)}
	}()
	<-entered

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()

	// New connections are refused once shutdown began.
	testkit.CheckFor(t, 5*time.Second, func() error {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		return errors.New("listener still accepting after Shutdown began")
	})
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) before the in-flight request finished", err)
	default:
	}
	close(release)
	if r := <-res; r.code != 200 || r.body != "finished" {
		t.Fatalf("in-flight request = %d %q, want it to complete", r.code, r.body)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestShutdownDeadlineCutsRequests(t *testing.T) {
	s := startServer(t, Config{})
	entered := make(chan struct{})
	block := make(chan struct{})
	defer close(block)
	s.Handle("GET /stuck", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	go func() {
		resp, err := http.Get("http://" + s.Addr() + "/stuck")
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a stuck request = %v, want DeadlineExceeded", err)
	}
}

func TestShutdownWithoutStart(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The port is released.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port not released after Shutdown: %v", err)
	}
	ln.Close()
}
