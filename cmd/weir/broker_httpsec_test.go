package main

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"weir/broker/node"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// TestBrokerHTTPSecurityFlags: weir broker with --admin-addr https://,
// the admin listener's listener.name.admin.* settings and
// --registry-config (Confluent's names) serves both over TLS with basic
// auth; the CLI registers a schema through it; no password reaches the
// broker's log. An unknown --registry-config name is refused at start.
func TestBrokerHTTPSecurityFlags(t *testing.T) {
	_, _, err := runWeir(t, "", "broker", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0", "--admin-addr", "off",
		"--registry-config", "listeners=http://127.0.0.1:0", "--registry-config", "kafkastore.topic=_s")
	if err == nil || !strings.Contains(err.Error(), `"kafkastore.topic" is not known`) {
		t.Fatalf("unknown registry config: %v", err)
	}

	bin := weirbin.Build(t)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "cli CA")
	keystore := tlstest.Write(t, dir, "server.pem", ca.Issue(t, tlstest.Leaf{}).KeyStore())
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	users := tlstest.Write(t, dir, "users", []byte("dev: dev-Secret-1,developer\nprom: prom-Secret-2,metrics\n"))
	cmd := exec.Command(bin, "broker", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0", "--log-format", "json",
		"--admin-addr", "https://127.0.0.1:0",
		"--config", "ssl.keystore.location="+keystore,
		"--config", "listener.name.admin.authentication.method=BASIC",
		"--config", "listener.name.admin.authentication.users.file="+users,
		"--config", "listener.name.admin.authentication.roles=metrics",
		"--registry-config", "listeners=https://127.0.0.1:0",
		"--registry-config", "ssl.keystore.location="+keystore,
		"--registry-config", "authentication.method=BASIC",
		"--registry-config", "authentication.users.file="+users,
		"--registry-config", "authentication.roles=developer")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	addrs := map[string]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var e struct{ Msg, Addr, Scheme string }
			_ = json.Unmarshal(sc.Bytes(), &e)
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			if e.Scheme == "https" && (e.Msg == "schema registry listening" || e.Msg == "admin HTTP listening") {
				addrs[e.Msg] = e.Addr
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	testkit.CheckFor(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(addrs) < 2 {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	reg := "https://" + node.Dialable(addrs["schema registry listening"])
	testkit.CheckFor(t, 30*time.Second, func() error {
		_, _, err := runWeir(t, "", "schema", "list", "--registry", reg, "--registry-ca-file", caFile, "--registry-user-info", "dev:dev-Secret-1")
		return err
	})
	v1 := writeFile(t, "v1.avsc", cliUserV1)
	mustWeir(t, "", "schema", "register", "u-value", "--file", v1, "--registry", reg, "--registry-ca-file", caFile, "--registry-user-info", "dev:dev-Secret-1")
	_, _, err = runWeir(t, "", "schema", "list", "--registry", reg, "--registry-ca-file", caFile, "--registry-user-info", "dev:Wr0ng-Pass")
	if err == nil || !strings.Contains(err.Error(), "40101") {
		t.Fatalf("wrong password: %v", err)
	}

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}, Timeout: 10 * time.Second}
	for _, c := range []struct {
		user, pass string
		want       int
	}{{"prom", "prom-Secret-2", 200}, {"dev", "dev-Secret-1", 403}, {"", "", 401}} {
		req, _ := http.NewRequest("GET", "https://"+node.Dialable(addrs["admin HTTP listening"])+"/metrics", nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("/metrics as %q: %d, want %d", c.user, resp.StatusCode, c.want)
		}
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(log.String(), `"user":"dev"`) {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	cmd.Process.Signal(syscall.SIGTERM)
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, secret := range []string{"dev-Secret-1", "prom-Secret-2", "Wr0ng-Pass"} {
		if strings.Contains(log.String(), secret) {
			t.Fatalf("the broker's log holds a password (%s)", secret)
		}
	}
}
