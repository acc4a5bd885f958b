package main

import (
	"crypto/x509/pkix"
	"fmt"
	"strings"
	"testing"

	"weir/broker/brokertest/testbroker"
	"weir/broker/tlsconf/tlstest"
)

// TestCommandConfigOverTLS: the client commands take Kafka's
// --command-config properties file: weir topic/produce/consume reach a
// broker's SSL listener with mutual TLS (bootstrap.servers from the file),
// and no output holds the key password.
func TestCommandConfigOverTLS(t *testing.T) {
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "cli CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	b := testbroker.Start(t, testbroker.Listeners("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", map[string]string{
		"ssl.keystore.location": tlstest.Write(t, dir, "broker.pem", srv.KeyStore()), "ssl.truststore.location": caFile,
		"ssl.client.auth": "required"}))
	cli := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "cli"}})
	const keyPass = "cli-K3y-pass-77"
	keystore := tlstest.Write(t, dir, "cli.pem", tlstest.EncryptKey(t, cli.KeyPEM, keyPass), cli.CertPEM)
	props := tlstest.Write(t, dir, "client.properties", []byte(fmt.Sprintf(
		"bootstrap.servers=%s\nsecurity.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\nssl.keystore.location=%s\nssl.key.password=%s\n",
		b.ListenerAddr("SSL"), caFile, keystore, keyPass)))
	t.Setenv("WEIR_BROKERS", "")
	var all strings.Builder
	run := func(stdin string, args ...string) string {
		out, errOut, err := runWeir(t, stdin, args...)
		all.WriteString(out + errOut)
		if err != nil {
			all.WriteString(err.Error())
			t.Fatalf("weir %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	run("", "topic", "create", "tls-cli", "--partitions", "1", "--command-config", props)
	run("a\nb\n", "produce", "tls-cli", "--command-config", props)
	out := run("", "consume", "tls-cli", "--from-beginning", "--exit-at-end", "--command-config", props)
	if out != "a\nb\n" {
		t.Errorf("consumed %q", out)
	}
	// weir bench takes --command-config too: produce, consume and the kgo
	// round trip over mutual TLS; the raw modes refuse it.
	run("", "bench", "produce", "--topic", "tls-bench", "--records", "500", "--partitions", "1", "--report-interval", "-1s", "--command-config", props)
	if recs := b.ReadAll("tls-bench"); len(recs) != 500 {
		t.Errorf("weir bench produce over TLS wrote %d records, want 500", len(recs))
	}
	if out := run("", "bench", "consume", "--topic", "tls-bench", "--records", "500", "--report-interval", "-1s", "--command-config", props); !strings.Contains(out, "500") {
		t.Errorf("weir bench consume over TLS: %q", out)
	}
	run("", "bench", "roundtrip", "--topic", "tls-rt", "--records", "20", "--warmup", "2", "--command-config", props)
	if _, _, err := runWeir(t, "", "bench", "roundtrip", "--mode", "raw-apiversions", "--records", "2", "--command-config", props); err == nil || !strings.Contains(err.Error(), "use mode kgo") {
		t.Errorf("raw round trip with --command-config: %v", err)
	}
	// Without the file, the SSL port does not answer a plaintext client.
	_, _, err := runWeir(t, "", "topic", "list", "--brokers", b.ListenerAddr("SSL"), "--timeout", "2s")
	if err == nil {
		t.Error("plaintext client listed topics on the SSL listener")
	}
	// A wrong password is an error naming the property, not the value.
	bad := tlstest.Write(t, dir, "bad.properties", []byte(fmt.Sprintf("security.protocol=SSL\nssl.keystore.location=%s\nssl.key.password=wrong-%s\n", keystore, keyPass)))
	_, errOut, err := runWeir(t, "", "topic", "list", "--brokers", b.ListenerAddr("SSL"), "--command-config", bad)
	if err == nil || !strings.Contains(err.Error(), "ssl.key.password") {
		t.Errorf("wrong key password: err = %v", err)
	}
	all.WriteString(errOut + fmt.Sprint(err))
	if strings.Contains(all.String(), keyPass) {
		t.Errorf("the key password was printed:\n%s", all.String())
	}
}
