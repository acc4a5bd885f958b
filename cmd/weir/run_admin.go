package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"weir/broker/admin"
	"weir/broker/httpsec"
	"weir/internal/kafkaclient"
	"weir/pipelines/observe"
)

// DefaultRunAdminAddr is weir run's admin listener when neither
// --admin-addr nor the embedded broker's admin_addr names one: loopback
// only, next to the broker's 9644 (as Kafka Connect's REST API listens
// on 8083 unless told otherwise). weir tap and weir top look there.
const DefaultRunAdminAddr = "127.0.0.1:9645"

// RunAdmin is what weir run serves on its admin listener: handlers mount
// on Server (the pipeline API, the console's pages).
type RunAdmin struct {
	Server   *admin.Server
	Pipeline observe.Pipeline
	// Client and RegistryURL/Registry reach the run's cluster and schema
	// registry (the embedded ones or the broker block's).
	Client      kafkaclient.Options
	RegistryURL string
	Registry    kafkaclient.Registry
	Logger      *zap.Logger
}

// runAdminHooks mount more handlers on weir run's admin listener, after
// the pipeline API (the console registers one from an init function).
var runAdminHooks []func(*RunAdmin) error

// runAdminListener returns the admin server of weir run: the embedded
// broker's when it has one, else its own on addr ("" means
// DefaultRunAdminAddr, and an address in use there is a warning, not an
// error; "off" means none). reg is served at /metrics.
func runAdminListener(lg *zap.Logger, emb *embeddedBroker, addr string, reg *prometheus.Registry) (srv *admin.Server, stop func(), err error) {
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
	st, err := httpsec.ParseAdmin(addr, nil)
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

// mountRunAdmin serves the pipeline API and the hooks' handlers.
func mountRunAdmin(a *RunAdmin) error {
	observe.NewAPI(a.Pipeline).Mount(a.Server)
	for _, h := range runAdminHooks {
		if err := h(a); err != nil {
			return err
		}
	}
	a.Server.Start()
	a.Logger.Info("pipeline API listening", zap.String("admin_addr", a.Server.Addr()),
		zap.String("url", adminURL(a.Server.Addr())+"/api/v1/pipeline"))
	return nil
}

// adminURL turns an admin address (host:port, :port, http(s)://...) into a
// base URL.
func adminURL(addr string) string {
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return strings.TrimRight(addr, "/")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("http://%s", net.JoinHostPort(host, port))
}
