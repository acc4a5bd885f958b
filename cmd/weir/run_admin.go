package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"weir/broker/admin"
	"weir/broker/httpsec"
	"weir/console"
	"weir/internal/kafkaclient"
	"weir/pipelines/observe"
)

// DefaultRunAdminAddr is weir run's admin listener when neither
// --admin-addr nor the embedded broker's admin_addr names one: loopback
// only, next to the broker's 9644 (as Kafka Connect's REST API listens
// on 8083 unless told otherwise). weir tap and weir top look there.
const DefaultRunAdminAddr = "127.0.0.1:9645"

// RunAdmin is what weir run serves on its admin listener: the pipeline
// API and the web console with its pipelines page.
type RunAdmin struct {
	Server   *admin.Server
	Pipeline observe.Pipeline
	// Client and Registry are how the pipeline reaches its cluster and
	// schema registry (seed brokers, TLS, SASL, basic auth): the console
	// connects as the pipeline does unless --console-client-config says
	// otherwise.
	Client   kafkaclient.Options
	Registry kafkaclient.Registry
	Console  *consoleFlags
	// Files are the pipeline paths; Worker the worker id in a group.
	Files  []string
	Worker string
	Logger *zap.Logger
}

// parseAdminConfig reads --admin-config NAME=VALUE settings: the admin
// listener's TLS (ssl.*) and authentication, with weir broker's names,
// bare or under listener.name.admin. Passwords are refused: a flag value
// shows in the process list.
func parseAdminConfig(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("--admin-config %q: want NAME=VALUE", k)
		}
		rest := strings.TrimPrefix(k, httpsec.AdminPrefix)
		if !strings.HasPrefix(rest, "ssl.") && !httpsec.IsAuthName(rest) {
			return nil, fmt.Errorf("--admin-config %s: not an admin listener setting (ssl.* or %sauthentication.*, as weir broker's --config names them)", k, httpsec.AdminPrefix)
		}
		if strings.HasSuffix(rest, ".password") {
			return nil, fmt.Errorf("--admin-config %s: a password in a flag shows in the process list; use an unencrypted PEM key store readable only by weir, or the embedded broker block's config with env() or file()", k)
		}
		out[k] = v
	}
	return out, nil
}

// withAdminConfig returns the embedded broker's configs with the
// --admin-config settings added under listener.name.admin. (so that
// ssl.* applies to the admin listener only); configs is not changed.
func withAdminConfig(configs, admin map[string]string) map[string]string {
	if len(admin) == 0 {
		return configs
	}
	out := maps.Clone(configs)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range admin {
		if !strings.HasPrefix(k, httpsec.AdminPrefix) {
			k = httpsec.AdminPrefix + k
		}
		out[k] = v
	}
	return out
}

// runAdminListener returns the admin server of weir run: the embedded
// broker's when it has one, else its own on addr ("" means
// DefaultRunAdminAddr, and an address in use there is a warning, not an
// error; "off" means none) with the TLS and authentication settings of
// configs (--admin-config). reg is served at /metrics.
func runAdminListener(lg *zap.Logger, emb *embeddedBroker, addr string, configs map[string]string, reg *prometheus.Registry) (srv *admin.Server, stop func(), err error) {
	if emb != nil && emb.n.Admin() != nil {
		return emb.n.Admin(), func() {}, nil
	}
	if strings.EqualFold(addr, "off") {
		return nil, func() {}, nil
	}
	def := addr == ""
	if def {
		addr = DefaultRunAdminAddr
	}
	st, err := httpsec.ParseAdmin(addr, configs)
	if err != nil {
		return nil, nil, err
	}
	sec, err := httpsec.New(st, lg.Named("admin"))
	if err != nil {
		return nil, nil, err
	}
	srv, err = admin.New(admin.Config{Addr: st.Addr, Registry: reg, Logger: lg.Named("admin"), Security: sec})
	if err != nil {
		sec.Close()
		if def && errors.Is(err, syscall.EADDRINUSE) {
			lg.Info("the default admin listener's address is in use: no pipeline API (weir tap, weir top); set --admin-addr",
				zap.String("addr", addr))
			return nil, func() {}, nil
		}
		return nil, nil, err
	}
	return srv, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		sec.Close()
	}, nil
}

// meterEvery is how often weir run's meter snapshots the counters, so a
// first look (a console page, weir top) has rates at once.
const meterEvery = 2 * time.Second

// mountRunAdmin serves the pipeline API and the console until ctx ends;
// the returned function closes the console.
func mountRunAdmin(ctx context.Context, a *RunAdmin) (func(), error) {
	api := observe.NewAPI(a.Pipeline)
	api.Mount(a.Server)
	go api.Meter().Run(ctx, meterEvery)
	closeConsole, consoleOn := func() {}, false
	if a.Console != nil {
		con, err := startConsole(a.Console, a.Server, a.Client, a.Registry,
			consolePipelines{m: api.Meter(), files: a.Files, worker: a.Worker}, a.Logger)
		if err != nil {
			return nil, err
		}
		if con != nil {
			closeConsole, consoleOn = con.Close, true
		}
	}
	a.Server.Start()
	// One line for the listener's two services (the quickstart's start
	// stays under 20 lines at info).
	base := adminURL(a.Server.URL())
	fields := []zap.Field{zap.String("admin_addr", a.Server.Addr()), zap.String("url", base+"/api/v1/pipeline")}
	if consoleOn {
		fields = append(fields, zap.String("console", base+console.Prefix), zap.Bool("console_read_only", a.Console.readOnly))
	}
	a.Logger.Info("pipeline API listening", fields...)
	return closeConsole, nil
}

// adminURL turns an admin address (host:port, :port, http(s)://...) into a
// base URL; a wildcard host becomes 127.0.0.1.
func adminURL(addr string) string {
	scheme := "http"
	if sc, rest, ok := strings.Cut(addr, "://"); ok {
		scheme, addr = strings.ToLower(sc), strings.TrimRight(rest, "/")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
