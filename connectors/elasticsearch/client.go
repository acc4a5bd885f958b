package elasticsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"weir/internal/pemfile"

	es "github.com/elastic/go-elasticsearch/v8"
)

// ErrUnsupportedServer is returned when the server at the configured URL
// is neither Elasticsearch (7.x or later) nor OpenSearch.
var ErrUnsupportedServer = errors.New("unsupported search server")

// ServerInfo is what GET / says about the server.
type ServerInfo struct {
	Product string // "elasticsearch" or "opensearch"
	Version string // "7.17.29", "2.19.6"
	Major   int
	Minor   int
	// SendsProductHeader: the server sends X-Elastic-Product itself
	// (Elasticsearch 7.14 and later).
	SendsProductHeader bool
}

// newClient builds the go-elasticsearch client for cfg. The client's own
// retries are off: the sink classifies and retries failures itself.
func newClient(cfg *Config) (*es.Client, *productTransport, error) {
	tlsCfg, err := pemfile.Client{CAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile,
		KeyPassword: pemfile.Secret(cfg.KeyPassword), ServerName: cfg.ServerName, InsecureSkipVerify: cfg.InsecureSkipVerify}.Config()
	if err != nil {
		return nil, nil, fmt.Errorf("ca_file/cert_file/key_file: %w", err)
	}
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		MaxIdleConnsPerHost:   cfg.Workers + 2,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		TLSHandshakeTimeout:   10 * time.Second,
	}
	pt := &productTransport{base: base, auth: authHeader(cfg)}
	c, err := es.NewClient(es.Config{
		Addresses:               cfg.URLs,
		Username:                cfg.Username,
		Password:                cfg.Password,
		APIKey:                  cfg.APIKey,
		Transport:               pt,
		DisableRetry:            true,
		CompressRequestBody:     cfg.Compress,
		PoolCompressor:          cfg.Compress,
		EnableCompatibilityMode: false, // 7.x and OpenSearch reject compatible-with=8
	})
	if err != nil {
		return nil, nil, fmt.Errorf("urls: %w", err)
	}
	return c, pt, nil
}

func authHeader(cfg *Config) string {
	switch {
	case cfg.APIKey != "":
		return "ApiKey " + cfg.APIKey
	case cfg.Username != "":
		req, _ := http.NewRequest("GET", "http://x/", nil)
		req.SetBasicAuth(cfg.Username, cfg.Password)
		return req.Header.Get("Authorization")
	}
	return ""
}

// productTransport lets go-elasticsearch v8 talk to OpenSearch and to
// Elasticsearch before 7.14. The v8 client refuses any server whose first
// successful response lacks "X-Elastic-Product: Elasticsearch". When a
// successful response lacks the header, this transport asks the server
// what it is (GET /, once per transport) and, if it is OpenSearch or
// Elasticsearch 7.x, adds the header to that server's responses. Any
// other server stays refused (ErrUnsupportedServer).
type productTransport struct {
	base http.RoundTripper
	auth string

	mu   sync.Mutex
	info *ServerInfo // nil until identified
}

func (t *productTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode >= 300 || resp.Header.Get("X-Elastic-Product") != "" {
		return resp, err
	}
	info, ierr := t.identify(req)
	if ierr != nil {
		resp.Body.Close()
		return nil, ierr
	}
	if info.Product == "opensearch" || (info.Product == "elasticsearch" && info.Major == 7) {
		resp.Header.Set("X-Elastic-Product", "Elasticsearch")
	}
	return resp, nil
}

// Info returns the server identity if a request has identified it.
func (t *productTransport) Info() *ServerInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.info
}

func (t *productTransport) identify(orig *http.Request) (*ServerInfo, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.info != nil {
		return t.info, nil
	}
	u := *orig.URL
	u.Path, u.RawQuery = "/", ""
	req, err := http.NewRequestWithContext(orig.Context(), "GET", u.String(), nil)
	if err != nil {
		return nil, err
	}
	if a := orig.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	} else if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("identifying the search server at %s: %w", u.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("identifying the search server at %s: GET / answered %d: %s", u.Host, resp.StatusCode, body)
	}
	info, err := parseServerInfo(body, resp.Header)
	if err != nil {
		return nil, fmt.Errorf("search server at %s: %w", u.Host, err)
	}
	t.info = info
	return info, nil
}

func parseServerInfo(body []byte, h http.Header) (*ServerInfo, error) {
	var root struct {
		Version struct {
			Number       string `json:"number"`
			Distribution string `json:"distribution"`
		} `json:"version"`
		Tagline string `json:"tagline"`
	}
	if err := json.Unmarshal(body, &root); err != nil || root.Version.Number == "" {
		return nil, fmt.Errorf("%w: GET / is not an Elasticsearch or OpenSearch answer: %.200s", ErrUnsupportedServer, body)
	}
	info := &ServerInfo{Version: root.Version.Number, SendsProductHeader: h.Get("X-Elastic-Product") == "Elasticsearch"}
	parts := strings.SplitN(root.Version.Number, ".", 3)
	info.Major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 {
		info.Minor, _ = strconv.Atoi(parts[1])
	}
	switch {
	case root.Version.Distribution == "opensearch" || strings.Contains(root.Tagline, "OpenSearch"):
		info.Product = "opensearch"
	case strings.Contains(root.Tagline, "You Know, for Search"):
		info.Product = "elasticsearch"
		if info.Major < 7 {
			return nil, fmt.Errorf("%w: Elasticsearch %s (need 7.x or later)", ErrUnsupportedServer, info.Version)
		}
	default:
		return nil, fmt.Errorf("%w: unknown product (version %s, tagline %q)", ErrUnsupportedServer, info.Version, root.Tagline)
	}
	return info, nil
}
