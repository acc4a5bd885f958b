package main

import (
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// TestRunConsoleUsesPipelineClient: weir run against an external weir
// broker reached only over SASL_SSL (PLAIN, the password from env(), a
// private CA) serves a console whose Kafka client connects as the
// pipeline does: the topics page lists the pipeline's topic and the
// cluster page its broker, without --console-client-config. The
// password is in no output.
func TestRunConsoleUsesPipelineClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and weir run; skipped with -short")
	}
	bin := weirbin.Build(t)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "console CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	const password = "console-Sasl-Pa55-73"
	b := testbroker.Start(t, testbroker.Listeners("PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", map[string]string{
		"ssl.keystore.location":   tlstest.Write(t, dir, "broker.pem", srv.KeyStore()),
		"sasl.enabled.mechanisms": "PLAIN",
		"sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required user_pipelines="` + password + `";`,
	}))
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "app.log"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	pipeline := tlstest.Write(t, dir, "pipeline.hcl", []byte(fmt.Sprintf(`
broker {
  brokers = [%q]
  client_config = {
    "security.protocol"       = "SASL_SSL"
    "sasl.mechanism"          = "PLAIN"
    "sasl.username"           = "pipelines"
    "sasl.password"           = env("WEIR_TEST_SASL_PASSWORD")
    "ssl.truststore.location" = %q
  }
}

topic "console_events" {
  partitions = 2
}

source "file" "in" {
  topic    = topic.console_events
  include  = [%q]
  encoding = "json"
}

sink "file" "out" {
  from = [topic.console_events]
  path = %q
}
`, b.ListenerAddr("SASL_SSL"), caFile, filepath.Join(in, "*.log"), out)))
	p := startWeir(t, append(os.Environ(), "WEIR_TEST_SASL_PASSWORD="+password), bin, "run", pipeline,
		"--log-format", "json", "--admin-addr", "127.0.0.1:0")
	p.waitLines(t, out, 2, 60*time.Second)
	m := regexp.MustCompile(`"msg":"pipeline API listening".*"admin_addr":"([^"]+)"`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no admin listener in weir run's log:\n%s", p.stderr.String())
	}
	base := adminURL(m[1])
	get := func(path string) (int, string, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, c := range []struct{ path, want string }{
		{"/console/topics", "console_events"},
		{"/console/", b.ListenerAddr("SASL_SSL")[strings.LastIndexByte(b.ListenerAddr("SASL_SSL"), ':')+1:]},
	} {
		testkit.CheckFor(t, 30*time.Second, func() error {
			code, body, err := get(c.path)
			if err != nil {
				return err
			}
			if code != http.StatusOK || !strings.Contains(body, c.want) {
				return fmt.Errorf("GET %s: %d, want 200 showing %q:\n%s", c.path, code, c.want, body)
			}
			return nil
		})
	}
	p.interrupt(t)
	if all := p.stdout.String() + p.stderr.String(); strings.Contains(all, password) {
		t.Errorf("the SASL password was printed:\n%s", all)
	}
}
