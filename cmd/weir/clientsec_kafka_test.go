package main

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkapeer"
	"weir/internal/weirbin"
)

// TestRunOnApacheKafkaOverSASLSSL: `weir run` with its broker block
// naming a real Apache Kafka 4.4 over SASL_SSL with SCRAM-SHA-512 (the
// password from env()) creates its topic there and moves records from a
// file source to a file sink through it; the password is in no output.
func TestRunOnApacheKafkaOverSASLSSL(t *testing.T) {
	bin := weirbin.Build(t)
	if why := kafkapeer.Available(); why != "" {
		t.Fatal(why)
	}
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "kafka CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "kafka"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	const password = "sasl-Pipeline-Secr3t-58"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := kafkapeer.Start(ctx, kafkapeer.Options{Dir: dir, KeyStore: tlstest.Write(t, dir, "kafka.pem", srv.KeyStore()),
		SCRAM: map[string]string{"pipelines": password}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "app.log"), []byte("alpha\nbeta\ngamma\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	pipeline := tlstest.Write(t, dir, "pipeline.hcl", []byte(fmt.Sprintf(`
broker {
  brokers = [%q]
  client_config = {
    "security.protocol"       = "SASL_SSL"
    "sasl.mechanism"          = "SCRAM-SHA-512"
    "sasl.username"           = "pipelines"
    "sasl.password"           = env("WEIR_TEST_SASL_PASSWORD")
    "ssl.truststore.type"     = "PEM"
    "ssl.truststore.location" = %q
  }
}

topic "events" {
  partitions = 2
}

source "file" "in" {
  topic    = topic.events
  include  = [%q]
  encoding = "json"
}

sink "file" "out" {
  from = [topic.events]
  path = %q
}
`, k.SASLSSL, caFile, filepath.Join(in, "*.log"), out)))
	p := startWeir(t, append(os.Environ(), "WEIR_TEST_SASL_PASSWORD="+password), bin, "run", pipeline, "--log-format", "json", "--log-level", "debug")
	p.waitLines(t, out, 3, 90*time.Second)
	p.interrupt(t)
	all := p.stdout.String() + p.stderr.String()
	if strings.Contains(all, password) {
		t.Errorf("the SASL password was printed:\n%s", all)
	}
	if !strings.Contains(all, `"security_protocol":"SASL_SSL"`) {
		t.Errorf("weir run did not log its security protocol:\n%s", all)
	}
}
