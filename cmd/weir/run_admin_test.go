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
	if srv, stop, err := runAdminListener(lg, nil, "off", nil, prometheus.NewRegistry()); srv != nil || err != nil {
		t.Fatalf("off: %v, %v", srv, err)
	} else {
		stop()
	}
	// Hold the default address (or find it held already).
	if ln, err := net.Listen("tcp", DefaultRunAdminAddr); err == nil {
		defer ln.Close()
	}
	srv, stop, err := runAdminListener(lg, nil, "", nil, prometheus.NewRegistry())
	if srv != nil || err != nil {
		t.Fatalf("default address in use: %v, %v", srv, err)
	}
	stop()
	if n := logs.FilterMessageSnippet("default admin listener's address is in use").FilterLevelExact(zapcore.InfoLevel).Len(); n != 1 {
		t.Fatalf("%d info lines about the default address in use: %v", n, logs.All())
	}
	if _, _, err := runAdminListener(lg, nil, DefaultRunAdminAddr, nil, prometheus.NewRegistry()); err == nil || !strings.Contains(err.Error(), DefaultRunAdminAddr) {
		t.Fatalf("--admin-addr in use: %v", err)
	}
	srv, stop, err = runAdminListener(lg, nil, "127.0.0.1:0", nil, prometheus.NewRegistry())
	if err != nil || srv == nil {
		t.Fatalf("127.0.0.1:0: %v, %v", srv, err)
	}
	stop()
}

// TestAdminConfig: --admin-config takes the admin listener's ssl.* and
// authentication settings (bare or under listener.name.admin.), refuses
// other names and passwords without echoing them, and adds them to an
// embedded broker's configs under listener.name.admin. only.
func TestAdminConfig(t *testing.T) {
	got, err := parseAdminConfig([]string{"ssl.keystore.location=/k.pem", "listener.name.admin.authentication.method=BASIC"})
	if err != nil || got["ssl.keystore.location"] != "/k.pem" || got["listener.name.admin.authentication.method"] != "BASIC" {
		t.Fatalf("%v, %v", got, err)
	}
	for _, c := range []struct{ kv, want string }{
		{"log.retention.hours=1", "not an admin listener setting"},
		{"ssl.key.password=S3cret-77", "process list"},
		{"listener.name.admin.ssl.keystore.password=S3cret-77", "process list"},
		{"ssl.keystore.location", "NAME=VALUE"},
	} {
		_, err := parseAdminConfig([]string{c.kv})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "S3cret-77") {
			t.Errorf("%s: %v, want an error saying %q without the value", c.kv, err, c.want)
		}
	}
	base := map[string]string{"ssl.keystore.location": "/kafka.pem"}
	m := withAdminConfig(base, got)
	if m["listener.name.admin.ssl.keystore.location"] != "/k.pem" || m["ssl.keystore.location"] != "/kafka.pem" ||
		m["listener.name.admin.authentication.method"] != "BASIC" || len(base) != 1 {
		t.Fatalf("embedded configs %v (base %v)", m, base)
	}
}
