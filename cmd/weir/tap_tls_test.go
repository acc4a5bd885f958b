package main

import (
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
	"weir/internal/weirbin"
	"weir/pipelines/observe"
)

// TestTapTopOverTLS: weir run (its own admin listener, set with
// --admin-config) serving https with a private CA, requiring a client
// certificate and basic auth; weir tap and
// weir top reach it with --admin-ca-file, --admin-cert-file and the
// credentials from a file (--admin-user-info-file) or the environment
// ($WEIR_ADMIN_BASIC_AUTH), and say what is missing when a piece is:
// the CA, the client certificate, the credentials, the right password.
// No password is in any output or command line.
func TestTapTopOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts weir run; skipped with -short")
	}
	bin := weirbin.Build(t)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "admin CA")
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	keystore := tlstest.Write(t, dir, "server.pem", ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "weir run"}}).KeyStore())
	cli := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "operator"}})
	certFile := tlstest.Write(t, dir, "operator.pem", cli.CertPEM)
	keyFile := tlstest.Write(t, dir, "operator-key.pem", cli.KeyPEM)
	const password = "admin-Tap-Pa55-4417"
	users := tlstest.Write(t, dir, "users", []byte("ops: "+password+",operator\n"))
	credFile := tlstest.Write(t, dir, "ops.cred", []byte("ops:"+password+"\n"))
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(in, "app.log")
	if err := os.WriteFile(logFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := testbroker.Start(t)
	pipeline := tlstest.Write(t, dir, "pipeline.hcl", []byte(fmt.Sprintf(`
broker {
  brokers = [%q]
}

topic "lines" {
  partitions = 1
}

source "file" "in" {
  topic    = topic.lines
  include  = [%q]
  encoding = "json"
}

sink "file" "out" {
  from = [topic.lines]
  path = %q
}
`, b.Addr, filepath.Join(in, "*.log"), filepath.Join(dir, "out.jsonl"))))
	// Its own admin listener (no embedded broker): --admin-config.
	p := startWeir(t, nil, bin, "run", pipeline, "--log-format", "json", "--admin-addr", "https://127.0.0.1:0",
		"--admin-config", "ssl.keystore.location="+keystore,
		"--admin-config", "ssl.truststore.location="+caFile,
		"--admin-config", "ssl.client.auth=required",
		"--admin-config", "listener.name.admin.authentication.method=BASIC",
		"--admin-config", "listener.name.admin.authentication.users.file="+users)
	re := regexp.MustCompile(`"msg":"pipeline API listening".*"admin_addr":"([^"]+)".*"url":"(https://[^"]+)"`)
	var addr string
	testkit.CheckFor(t, 60*time.Second, func() error {
		m := re.FindStringSubmatch(p.stderr.String())
		if m == nil {
			return fmt.Errorf("no https \"pipeline API listening\" line yet:\n%s", p.stderr.String())
		}
		addr = m[1]
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	appended := make(chan struct{})
	t.Cleanup(func() { cancel(); <-appended })
	go func() {
		defer close(appended)
		appendLogLines(ctx, logFile)
	}()

	var printed strings.Builder
	weir := func(env []string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		if strings.Contains(strings.Join(cmd.Args, " "), password) {
			t.Fatalf("the password is on the command line: %q", cmd.Args)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd = exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		printed.Write(out)
		return string(out), err
	}
	base := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "WEIR_ADMIN_") {
			base = append(base, e)
		}
	}
	tlsFlags := []string{"--admin-addr", addr, "--admin-ca-file", caFile, "--admin-cert-file", certFile, "--admin-key-file", keyFile}

	// weir top: credentials from a file, the address without a scheme
	// (the TLS flags mean https).
	testkit.CheckFor(t, 30*time.Second, func() error {
		out, err := weir(base, append([]string{"top", "--count", "2", "--interval", "1s", "--admin-user-info-file", credFile}, tlsFlags...)...)
		if err != nil {
			return testkit.Stop(fmt.Errorf("weir top: %v\n%s", err, out))
		}
		if !strings.Contains(out, "https://") || !regexp.MustCompile(`(?m)^source\.in +running`).MatchString(out) ||
			!regexp.MustCompile(`(?m)^topic\.lines → sink\.out +[1-9]`).MatchString(out) {
			return fmt.Errorf("weir top over https: no running source or edge rate yet:\n%s", out)
		}
		return nil
	})

	// weir tap: credentials and the CA from the environment.
	env := append(base, EnvAdminBasicAuth+"=ops:"+password, EnvAdminCAFile+"="+caFile)
	out, err := weir(env, "tap", "source.in", "--limit", "2", "--admin-addr", "https://"+addr, "--admin-cert-file", certFile, "--admin-key-file", keyFile)
	if err != nil {
		t.Fatalf("weir tap: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var s observe.Sample
		if err := json.Unmarshal([]byte(l), &s); err != nil || s.Component != "source.in" || s.Value == nil {
			t.Errorf("weir tap printed %q (%v), want samples of source.in", l, err)
		}
	}
	if len(lines) != 2 {
		t.Errorf("weir tap --limit 2 printed %d lines:\n%s", len(lines), out)
	}

	// What is missing is said, without a secret.
	wrong := tlstest.Write(t, dir, "wrong.cred", []byte("ops:not-"+password+"\n"))
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no CA", base, []string{"--admin-addr", "https://" + addr, "--admin-user-info-file", credFile}, "--admin-ca-file"},
		{"no client certificate", base, []string{"--admin-addr", addr, "--admin-ca-file", caFile, "--admin-user-info-file", credFile}, "--admin-cert-file"},
		{"no credentials", base, tlsFlags, "--admin-user-info-file or $" + EnvAdminBasicAuth},
		{"wrong password", base, append([]string{"--admin-user-info-file", wrong}, tlsFlags...), `refused user "ops"`},
		{"plain http", base, []string{"--admin-addr", "http://" + addr}, "serves https: https:// in --admin-addr"},
		{"credentials in the URL", base, []string{"--admin-addr", "https://ops:" + "x@" + addr}, "credentials in the URL are refused"},
	} {
		out, err := weir(c.env, append([]string{"top", "--count", "1"}, c.args...)...)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s: weir top: %v, want an error saying %q:\n%s", c.name, err, c.want, out)
		}
	}
	p.interrupt(t)
	printed.WriteString(p.stdout.String() + p.stderr.String())
	if strings.Contains(printed.String(), password) {
		t.Errorf("the password was printed:\n%s", printed.String())
	}
}
