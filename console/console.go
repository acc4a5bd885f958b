package console

import (
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/schemas"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a Console.
type Config struct {
	// Kafka is how the console reaches the cluster (seed brokers,
	// security); it is a Kafka client like any other.
	Kafka kafkaclient.Options
	// Registry is the schema registry; no URL: the schema pages say
	// that none is configured and records are shown undecoded.
	Registry srclient.Options
	// ReadOnly hides and refuses every mutating action.
	ReadOnly bool
	// Pipelines gives the pipelines page its data (weir run); nil: no
	// pipelines page.
	Pipelines Pipelines
	// Name is shown in the header next to "weir" (e.g. "broker 1");
	// "" shows nothing.
	Name string
	// SampleInterval is how often the history (throughput, lag) is
	// sampled; 0 means 10 s.
	SampleInterval time.Duration
	// History is how many samples each ring keeps; 0 means 360 (an
	// hour at the default interval).
	History int
	// CacheFor is how long the whole-cluster views (every topic's
	// metadata; the topics list's offsets and sizes) are kept and shared
	// between page views; the pages say when theirs was taken. 0 means
	// 5 s; negative: every view asks anew.
	CacheFor time.Duration
	// RequestTimeout bounds the Kafka and registry requests of one
	// page; 0 means 10 s.
	RequestTimeout time.Duration
	// Logger logs sampling errors; nil means none.
	Logger *zap.Logger
}

// Mux is where a console mounts: broker/admin.Server satisfies it, as
// does *http.ServeMux.
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Console is the web console. Its methods are safe for concurrent use.
type Console struct {
	cfg   Config
	lg    *zap.Logger
	kcl   *kgo.Client
	adm   *kadm.Client
	reg   *sr.Client // nil without a registry
	serde *schemas.Serde
	mux   *http.ServeMux
	pages map[string]*template.Template
	nav   []navEntry
	hist  *sampler

	metaCache   shared[*clusterMeta]
	metaLoads   atomic.Int64 // spreads the metadata requests over the brokers
	lagCache    shared[*lagSnapshot]
	topicsMu    sync.Mutex
	topicsCache map[topicsKey]*shared[topicsData]
	groupMu     sync.Mutex
	groupCache  map[string]*shared[*groupView]

	closeOnce sync.Once
}

type navEntry struct {
	Label, Path string
}

// New builds a console and its Kafka (and registry) clients; it does not
// contact the cluster until a page is asked for.
func New(cfg Config) (*Console, error) {
	if cfg.SampleInterval <= 0 {
		cfg.SampleInterval = 10 * time.Second
	}
	if cfg.History <= 0 {
		cfg.History = 360
	}
	if cfg.CacheFor == 0 {
		cfg.CacheFor = 5 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	if cfg.Kafka.ClientID == "" {
		cfg.Kafka.ClientID = "weir-console"
	}
	kcl, err := kafkaclient.New(cfg.Kafka)
	if err != nil {
		return nil, fmt.Errorf("console: Kafka client: %w", err)
	}
	c := &Console{cfg: cfg, lg: lg, kcl: kcl, adm: kadm.NewClient(kcl), mux: http.NewServeMux()}
	if strings.TrimSpace(cfg.Registry.URLs) != "" {
		if c.reg, err = srclient.New(cfg.Registry); err != nil {
			kcl.Close()
			return nil, fmt.Errorf("console: schema registry client: %w", err)
		}
		c.serde = schemas.NewSerde(schemas.SourceFunc(func(ctx context.Context, id int32) (string, error) {
			return c.reg.SchemaTextByID(ctx, int(id))
		}))
	}
	if err := c.parseTemplates(); err != nil {
		kcl.Close()
		return nil, err
	}
	c.hist = newSampler(c, cfg.SampleInterval, cfg.History)
	c.routes()
	return c, nil
}

// routes registers every page and its nav entry (the page pattern: see
// doc.go).
func (c *Console) routes() {
	c.page("GET /console/{$}", "Cluster", c.clusterPage)
	c.page("GET /console/topics", "Topics", c.topicsPage)
	c.handle("GET /console/topics/{topic}", c.topicPage)
	c.handle("GET /console/topics/{topic}/records", c.recordsPage)
	c.mutating("POST /console/topics", c.createTopic)
	c.page("GET /console/groups", "Consumer groups", c.groupsPage)
	c.handle("GET /console/groups/{group}", c.groupPage)
	c.page("GET /console/schemas", "Schema registry", c.schemasPage)
	c.handle("GET /console/schemas/{subject}", c.subjectPage)
	if c.cfg.Pipelines != nil {
		c.page("GET /console/pipelines", "Pipelines", c.pipelinesPage)
		c.mutating("POST /console/pipelines/{component}/restart", c.restartComponent)
	}
	static, _ := fs.Sub(staticFS, "static")
	c.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", cacheFor(http.FileServerFS(static))))
}

// page registers a page that has a nav entry (the path without {$}).
func (c *Console) page(pattern, label string, h http.HandlerFunc) {
	_, path, _ := strings.Cut(pattern, " ")
	c.nav = append(c.nav, navEntry{Label: label, Path: strings.TrimSuffix(path, "{$}")})
	c.handle(pattern, h)
}

// handle registers a page without a nav entry.
func (c *Console) handle(pattern string, h http.HandlerFunc) {
	c.mux.Handle(pattern, c.watched(h))
}

// mutating registers a handler that changes the cluster: refused with
// 403 in read-only mode and when the request comes from another origin
// (a cross-site form post riding on the browser's basic-auth
// credentials).
func (c *Console) mutating(pattern string, h http.HandlerFunc) {
	c.mux.Handle(pattern, c.watched(func(w http.ResponseWriter, r *http.Request) {
		if c.cfg.ReadOnly {
			http.Error(w, "the console is read-only: this action is disabled", http.StatusForbidden)
			return
		}
		if !sameOrigin(r) {
			http.Error(w, "refused: the request comes from another origin", http.StatusForbidden)
			return
		}
		h(w, r)
	}))
}

// sameOrigin: a browser sends Origin with every POST; no Origin (curl)
// is accepted, one naming another host is not.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// watched starts the sampler on the first request.
func (c *Console) watched(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hist.start()
		h(w, r)
	})
}

func cacheFor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=300")
		h.ServeHTTP(w, r)
	})
}

// Mount serves the console under /console/ on m.
func (c *Console) Mount(m Mux) { m.Handle(Prefix, c) }

// ServeHTTP serves the console's paths (all under /console/).
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	c.mux.ServeHTTP(w, r)
}

// Close stops the sampler and closes the clients.
func (c *Console) Close() {
	c.closeOnce.Do(func() {
		c.hist.stop()
		c.kcl.Close()
	})
}

// ctx is a page's context: the request's, bounded by RequestTimeout.
func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.cfg.RequestTimeout)
}
