package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/tlsconf"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
)

// tlsSetup is a CA, the broker's certificate in a PEM key store file and
// the CA in a trust store file, in a directory with a non-ASCII path.
type tlsSetup struct {
	dir              string
	ca               *tlstest.CA
	server           *tlstest.Issued
	keystore, trusts string
}

func newTLSSetup(t *testing.T) *tlsSetup { return newTLSSetupTB(t) }

func newTLSSetupTB(t testing.TB) *tlsSetup {
	t.Helper()
	s := &tlsSetup{dir: tlstest.Dir(t), ca: tlstest.NewCA(t, "weir test CA")}
	s.server = s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}})
	s.keystore = tlstest.Write(t, s.dir, "broker.pem", s.server.KeyStore())
	s.trusts = tlstest.Write(t, s.dir, "ca.pem", s.ca.PEM)
	return s
}

// settings are the ssl.* configs of the setup, plus extra.
func (s *tlsSetup) settings(extra ...string) map[string]string {
	m := map[string]string{tlsconf.SSLKeystoreLocation: s.keystore, tlsconf.SSLTruststoreLocation: s.trusts}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// withTLS gives the broker a PLAINTEXT and an SSL listener on 127.0.0.1:0,
// the SSL one configured by settings.
func withTLS(t *testing.T, settings map[string]string, srvOut **tlsconf.Server) brokerOpt {
	return withTLSOut(t, settings, srvOut)
}

func withTLSTB(t testing.TB, settings map[string]string) brokerOpt {
	return withTLSOut(t, settings, nil)
}

func withTLSOut(t testing.TB, settings map[string]string, srvOut **tlsconf.Server) brokerOpt {
	t.Helper()
	cfg, err := tlsconf.Parse("SSL", settings, settings)
	if err != nil {
		t.Fatal(err)
	}
	// Info: a failed test shows each reload and each store that did not load.
	ts, err := tlsconf.NewServer(cfg, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.Close)
	if srvOut != nil {
		*srvOut = ts
	}
	return func(c *Config) {
		c.Listeners = []Listener{
			{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: "127.0.0.1:0"},
			{Name: "SSL", Protocol: "SSL", Addr: "127.0.0.1:0", TLS: ts},
		}
		c.InterBrokerListener = "PLAINTEXT"
	}
}

// withHandshakeTimeout sets the broker's handshake timeout (TLS, and SASL
// before authentication) for the tests of connections that never finish
// theirs. The other tests keep the default (10 s): a real client's
// handshake (kcat's or a Java tool's SCRAM, a TLS handshake) on a loaded
// machine can take more than a second, and a short timeout then closes a
// good client's connection.
func withHandshakeTimeout(d time.Duration) brokerOpt {
	return func(c *Config) { c.HandshakeTimeout = d }
}

func (b *testBroker) listenerAddr(name string) string { return b.srv.ListenerAddrs()[name].String() }

func (s *tlsSetup) clientTLS(t *testing.T, cert *tlstest.Issued) *tls.Config {
	c := &tls.Config{RootCAs: s.ca.Pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		c.Certificates = []tls.Certificate{cert.TLSCertificate(t)}
	}
	return c
}

func produceConsume(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.AddConsumeTopics(topic)
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v (got %d of %d)", err, got, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != strconv.Itoa(got) {
				t.Fatalf("record %d = %q", got, r.Value)
			}
			got++
		})
	}
}

// metadataBrokers asks for Metadata on conn and returns the brokers'
// host:port.
func metadataBrokers(t *testing.T, r *rawConn) []string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	resp := r.roundTrip(req).(*kmsg.MetadataResponse)
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	return out
}

// TestTLSListenerFranz: franz-go produces and consumes over the SSL
// listener while a plaintext client uses the PLAINTEXT one; Metadata on
// each listener advertises that listener's address; a client certificate
// (ssl.client.auth=requested) gives the connection its mapped principal.
func TestTLSListenerFranz(t *testing.T) {
	t.Parallel()
	s := newTLSSetup(t)
	b := startBroker(t, withTLS(t, s.settings(
		tlsconf.SSLClientAuth, "requested",
		tlsconf.SSLPrincipalMappingRules, `RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/L,DEFAULT`), nil))
	createTopic(t, b, "tls", 1, nil)
	sslAddr, plainAddr := b.listenerAddr("SSL"), b.listenerAddr("PLAINTEXT")

	cl, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(s.clientTLS(t, nil)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceConsume(t, cl, "tls", 50)
	createTopic(t, b, "tls2", 1, nil)
	plain := b.client(kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	produceConsume(t, plain, "tls2", 5)

	// Metadata per listener.
	tc, err := tls.Dial("tcp", sslAddr, s.clientTLS(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if got := metadataBrokers(t, &rawConn{t: t, c: tc}); len(got) != 1 || got[0] != sslAddr {
		t.Fatalf("Metadata on SSL: brokers %v, want [%s]", got, sslAddr)
	}
	if got := metadataBrokers(t, dialRaw(t, plainAddr)); len(got) != 1 || got[0] != plainAddr {
		t.Fatalf("Metadata on PLAINTEXT: brokers %v, want [%s]", got, plainAddr)
	}

	// The principal of a client certificate, and of none.
	client := s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"Ops"}, Organization: []string{"Example"}}})
	mc, err := tls.Dial("tcp", sslAddr, s.clientTLS(t, client))
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	metadataBrokers(t, &rawConn{t: t, c: mc}) // the handshake is done once a request is answered
	principals := func() map[string]bool {
		out := map[string]bool{}
		b.srv.mu.Lock()
		defer b.srv.mu.Unlock()
		for c := range b.srv.conns {
			out[c.l.cfg.Name+" "+c.principal] = true
		}
		return out
	}()
	for _, want := range []string{"SSL User:alice@ops", "SSL User:ANONYMOUS", "PLAINTEXT User:ANONYMOUS"} {
		if !principals[want] {
			t.Errorf("no connection with %q; have %v", want, principals)
		}
	}
}

// TestTLSKcat: kcat (librdkafka) produces and consumes over SSL with the
// CA, then over mutual TLS (ssl.client.auth=required) with a client
// certificate; without one it is refused.
func TestTLSKcat(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	s := newTLSSetup(t)
	b := startBroker(t, withTLS(t, s.settings(tlsconf.SSLClientAuth, "required"), nil))
	createTopic(t, b, "kc", 1, nil)
	client := s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "kcat"}})
	cert := tlstest.Write(t, s.dir, "client.pem", client.CertPEM)
	key := tlstest.Write(t, s.dir, "client.key", client.KeyPEM)
	sslArgs := []string{"-b", b.listenerAddr("SSL"), "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + s.trusts,
		"-X", "ssl.certificate.location=" + cert, "-X", "ssl.key.location=" + key}

	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "m%d\n", i)
	}
	run := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run(in.String(), append(sslArgs, "-P", "-t", "kc")...); err != nil {
		t.Fatalf("kcat produce over mTLS: %v\n%s", err, out)
	}
	out, err := run("", append(sslArgs, "-C", "-t", "kc", "-o", "beginning", "-e", "-q")...)
	if err != nil {
		t.Fatalf("kcat consume over mTLS: %v\n%s", err, out)
	}
	if got := strings.Count(out, "\n"); got != 200 || !strings.HasPrefix(out, "m0\n") {
		t.Fatalf("kcat consumed %d lines: %.200q", got, out)
	}
	// No client certificate: the handshake fails, kcat gives up.
	out, err = run("", "-b", b.listenerAddr("SSL"), "-X", "security.protocol=ssl", "-X", "ssl.ca.location="+s.trusts, "-L", "-m", "2")
	if err == nil {
		t.Fatalf("kcat without a client certificate listed metadata:\n%s", out)
	}
}

// TestTLSBadInput: plaintext Kafka bytes to the SSL port, TLS to the
// PLAINTEXT port, an expired and an untrusted client certificate
// (ssl.client.auth=required), and a client that never finishes the
// handshake each lose their connection quickly, while a good client is
// served all along.
func TestTLSBadInput(t *testing.T) {
	t.Parallel()
	s := newTLSSetup(t)
	b := startBroker(t, withTLS(t, s.settings(tlsconf.SSLClientAuth, "required"), nil), withHandshakeTimeout(time.Second))
	sslAddr, plainAddr := b.listenerAddr("SSL"), b.listenerAddr("PLAINTEXT")
	good := s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "good"}})
	goodConn, err := tls.Dial("tcp", sslAddr, s.clientTLS(t, good))
	if err != nil {
		t.Fatal(err)
	}
	defer goodConn.Close()
	goodRaw := &rawConn{t: t, c: goodConn}
	metadataBrokers(t, goodRaw)

	start := time.Now()
	t.Run("plaintext to the SSL port", func(t *testing.T) {
		r := dialRaw(t, sslAddr)
		req := kmsg.NewPtrApiVersionsRequest()
		r.write(r.frame(req))
		r.expectClosed()
	})
	t.Run("TLS to the PLAINTEXT port", func(t *testing.T) {
		_, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", plainAddr, s.clientTLS(t, good))
		if err == nil {
			t.Fatal("TLS handshake with the PLAINTEXT port succeeded")
		}
	})
	expired := s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "old"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	untrusted := tlstest.NewCA(t, "other CA").Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "stranger"}})
	for name, cert := range map[string]*tlstest.Issued{"expired certificate": expired, "untrusted certificate": untrusted, "no certificate": nil} {
		t.Run(name, func(t *testing.T) {
			c, err := tls.Dial("tcp", sslAddr, s.clientTLS(t, cert))
			if err == nil {
				// TLS 1.3: the client finishes first; the server's
				// verdict arrives with the first read.
				defer c.Close()
				r := &rawConn{t: t, c: c}
				r.write(r.frame(kmsg.NewPtrApiVersionsRequest()))
				if _, err = r.readFrame(5 * time.Second); err == nil {
					t.Fatal("request answered")
				}
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("not refused within 5s: %v", err)
			}
			if !strings.Contains(err.Error(), "certificate") && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Logf("refused: %v", err)
			}
		})
	}
	t.Run("handshake never finished", func(t *testing.T) {
		r := dialRaw(t, sslAddr)
		r.write([]byte{0x16, 0x03, 0x01}) // the start of a record, then nothing
		began := time.Now()
		r.expectClosed()
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("closed after %s; the handshake timeout is 1s", d)
		}
	})
	// The good client was served throughout.
	if got := metadataBrokers(t, goodRaw); len(got) != 1 {
		t.Fatalf("good client: %v", got)
	}
	t.Logf("bad inputs refused in %s", time.Since(start))
}

// TestTLSCertificateRotation: a new key store file is used by new
// handshakes without a restart while a client keeps producing; a broken
// one is refused and the certificate in use kept.
func TestTLSCertificateRotation(t *testing.T) {
	t.Parallel()
	s := newTLSSetup(t)
	var ts *tlsconf.Server
	b := startBroker(t, withTLS(t, s.settings(), &ts))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ts.Watch(ctx, 20*time.Millisecond)
	sslAddr := b.listenerAddr("SSL")
	served := func() string {
		c, err := tls.Dial("tcp", sslAddr, s.clientTLS(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "broker" {
		t.Fatalf("served %q", got)
	}
	// A client keeps producing (and reconnecting) during the rotations.
	createTopic(t, b, "rot", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(s.clientTLS(t, nil)), kgo.ConnIdleTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := make(chan error, 1)
	go func() {
		var err error
		for i := 0; ctx.Err() == nil && err == nil; i++ {
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: "rot", Value: []byte("x")}).FirstErr()
		}
		if ctx.Err() != nil {
			err = nil
		}
		produced <- err
	}()

	for _, cn := range []string{"broker-2", "broker-3"} {
		next := s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: cn}})
		tmp := tlstest.Write(t, s.dir, "next.pem", next.KeyStore())
		if err := os.Rename(tmp, s.keystore); err != nil {
			t.Fatal(err)
		}
		testkit.CheckFor(t, 10*time.Second, func() error {
			if got := served(); got != cn {
				return fmt.Errorf("served %q, want %q", got, cn)
			}
			return nil
		})
	}
	// A broken file: the last good certificate stays.
	tlstest.Write(t, s.dir, "broker.pem", []byte("-----BEGIN PRIVATE KEY-----\nbroken\n"))
	if _, err := ts.Reload(); err == nil {
		t.Fatal("broken key store reloaded")
	}
	if got := served(); got != "broker-3" {
		t.Fatalf("after a broken file: served %q", got)
	}
	cancel()
	if err := <-produced; err != nil {
		t.Fatalf("producer during rotation: %v", err)
	}
}
