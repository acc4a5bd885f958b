package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/tlsconf/tlstest"
	"weir/internal/weirbin"
)

// TestBrokerListenersConfig: weir broker with --config listeners (PLAINTEXT
// and SSL on port 0), a PEM key store and mutual TLS logs the bound
// address of each listener, and a franz-go client with a client
// certificate produces over SSL. --kafka-addr with listeners is refused.
func TestBrokerListenersConfig(t *testing.T) {
	bin := weirbin.Build(t)
	_, _, err := runWeir(t, "", "broker", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0",
		"--config", "listeners=PLAINTEXT://127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "--kafka-addr") {
		t.Fatalf("--kafka-addr with listeners: %v", err)
	}

	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "cli CA")
	keystore := tlstest.Write(t, dir, "broker.pem", ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}}).KeyStore())
	trust := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	cmd := exec.Command(bin, "broker", "--data-dir", t.TempDir(), "--admin-addr", "off", "--registry-addr", "off", "--log-format", "json",
		"--config", "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"--config", "ssl.keystore.location="+keystore, "--config", "ssl.truststore.location="+trust,
		"--config", "ssl.client.auth=required")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	addrs := map[string]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(60 * time.Second)
	for len(addrs) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("weir broker exited; listeners seen: %v", addrs)
			}
			var e struct {
				Msg, Listener string
				Addr          string `json:"kafka_addr"`
			}
			if json.Unmarshal([]byte(l), &e) == nil && e.Msg == "kafka listener started" {
				addrs[e.Listener] = e.Addr
			}
		case <-deadline:
			t.Fatalf("listeners not reported within 60s: %v", addrs)
		}
	}
	go func() {
		for range lines {
		}
	}()
	client := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "cli"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs["SSL"]), kgo.AllowAutoTopicCreation(),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{client.TLSCertificate(t)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "over-tls", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce over SSL at %s: %v", addrs["SSL"], err)
	}
}
