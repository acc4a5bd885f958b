package main

import (
	"crypto/x509/pkix"
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
	"weir/internal/weirbin"
)

// TestRunExternalClusterOverTLS: `weir run` with a broker block naming an
// external cluster reached over mutual TLS (client_config with Kafka's
// client property names, the key password from env(), the trust store
// path from file()) creates its topic there and moves records from a
// file source to a file sink through it. The password appears in no
// output: weir run's logs at debug level, weir validate, weir graph.
// An unset variable is an error naming the attribute and file:line.
func TestRunExternalClusterOverTLS(t *testing.T) {
	bin := weirbin.Build(t)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "run CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	b := testbroker.Start(t, testbroker.Listeners("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", map[string]string{
		"ssl.keystore.location": tlstest.Write(t, dir, "broker.pem", srv.KeyStore()), "ssl.truststore.location": caFile,
		"ssl.client.auth": "required"}))
	cli := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "weir-run"}})
	const keyPass = "run-K3y-Pa55-secret-91"
	keystore := tlstest.Write(t, dir, "client.pem", tlstest.EncryptKey(t, cli.KeyPEM, keyPass), cli.CertPEM)
	tlstest.Write(t, dir, "truststore-path.txt", []byte(caFile+"\n")) // file() drops the trailing newline
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	pipeline := tlstest.Write(t, dir, "pipeline.hcl", []byte(fmt.Sprintf(`
broker {
  brokers = [%q]
  client_config = {
    "security.protocol"       = "SSL"
    "ssl.truststore.location" = file("truststore-path.txt")
    "ssl.keystore.location"   = %q
    "ssl.key.password"        = env("WEIR_TEST_KEY_PASSWORD")
  }
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

topic "copied" {
  partitions = 1
}

# brokers and client_config come from the broker block
sink "kafka" "copy" {
  from  = [topic.lines]
  topic = topic.copied
}
`, b.ListenerAddr("SSL"), keystore, filepath.Join(in, "*.log"), out)))

	// Unset: an error naming the variable, the attribute and file:line.
	cmd := exec.Command(bin, "validate", pipeline)
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "WEIR_TEST_KEY_PASSWORD=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "WEIR_TEST_KEY_PASSWORD is not set") ||
		!strings.Contains(string(msg), "broker.client_config") || !strings.Contains(string(msg), "pipeline.hcl:8") {
		t.Errorf("validate without the variable: %v\n%s", err, msg)
	}

	t.Setenv("WEIR_TEST_KEY_PASSWORD", keyPass)
	var printed strings.Builder
	for _, args := range [][]string{{"validate", pipeline}, {"graph", pipeline}} {
		o, err := exec.Command(bin, args...).CombinedOutput()
		printed.Write(o)
		if err != nil {
			t.Fatalf("weir %v: %v\n%s", args, err, o)
		}
	}
	if err := os.WriteFile(filepath.Join(in, "app.log"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startWeir(t, nil, bin, "run", pipeline, "--log-format", "json", "--log-level", "debug", "--status", "on")
	p.waitLines(t, out, 3, 60*time.Second)
	p.interrupt(t)
	printed.WriteString(p.stdout.String() + p.stderr.String())
	if strings.Contains(printed.String(), keyPass) {
		t.Errorf("the key password was printed:\n%s", printed.String())
	}
	if !regexp.MustCompile(`"security_protocol": ?"SSL"`).MatchString(p.stderr.String()) {
		t.Errorf("weir run did not log its security protocol:\n%s", p.stderr.String())
	}
	// The records went through the external cluster.
	if recs := b.ReadAll("lines"); len(recs) != 3 {
		t.Errorf("%d records in topic lines of the external broker, want 3", len(recs))
	}
	if recs := b.ReadAll("copied"); len(recs) != 3 {
		t.Errorf("%d records copied by the kafka sink over TLS, want 3", len(recs))
	}
}
