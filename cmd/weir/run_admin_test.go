package main

import (
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRunAdminListener: weir run's own admin listener. "off" is none;
// the default address in use (another weir run on the host) is an info
// line and no listener, not an error; an address given and in use is an
// error naming it; a free one serves.
func TestRunAdminListener(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	lg := zap.New(core)
	if srv, stop, err := runAdminListener(lg, nil, "off", prometheus.NewRegistry()); srv != nil || err != nil {
		t.Fatalf("off: %v, %v", srv, err)
	} else {
		stop()
	}
	// Hold the default address (or find it held already).
	if ln, err := net.Listen("tcp", DefaultRunAdminAddr); err == nil {
		defer ln.Close()
	}
	srv, stop, err := runAdminListener(lg, nil, "", prometheus.NewRegistry())
	if srv != nil || err != nil {
		t.Fatalf("default address in use: %v, %v", srv, err)
	}
	stop()
	if n := logs.FilterMessageSnippet("default admin listener's address is in use").FilterLevelExact(zapcore.InfoLevel).Len(); n != 1 {
		t.Fatalf("%d info lines about the default address in use: %v", n, logs.All())
	}
	if _, _, err := runAdminListener(lg, nil, DefaultRunAdminAddr, prometheus.NewRegistry()); err == nil || !strings.Contains(err.Error(), DefaultRunAdminAddr) {
		t.Fatalf("--admin-addr in use: %v", err)
	}
	srv, stop, err = runAdminListener(lg, nil, "127.0.0.1:0", prometheus.NewRegistry())
	if err != nil || srv == nil {
		t.Fatalf("127.0.0.1:0: %v, %v", srv, err)
	}
	stop()
}
