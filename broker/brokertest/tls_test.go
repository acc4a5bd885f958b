package brokertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/acl"
	"weir/broker/tlsconf/tlstest"
)

// TestTLSCluster is issue 16 item 4 on one cluster whose replication
// (INTERNAL) and controller (CONTROLLER) traffic is TLS-only with
// ssl.client.auth=required, in steps sharing it:
//
//   - the leader-kill test: acks=all records survive the leader's loss
//     and the old leader rejoins (replication and Raft over TLS);
//   - peers that may not join are refused at the handshake, logged with
//     the host and the certificate's subject: no certificate, one from
//     another CA, plaintext sent to the TLS controller port, a client
//     that never finishes the handshake (cut after the timeout); on the
//     controller port a trusted certificate whose principal is not in
//     super.users too;
//   - a broker whose key store file is replaced by a certificate of
//     another CA cannot rejoin the quorum nor fetch as a follower once
//     its connections are re-opened (its new connections take the new
//     file), while the others keep serving; replaced again by a valid
//     certificate (a new key, the same name), it rejoins the quorum and
//     every ISR;
//   - broker 3 restarted with a certificate of another CA does not get
//     past waiting for the quorum, its attempts refused and logged, while
//     the others serve; restarted with its valid certificate it rejoins.
//
// ACLs are on, with the brokers' certificate principals as super.users:
// follower fetches need CLUSTER_ACTION, as in Kafka, and the cluster
// resource has an ACL (User:ANONYMOUS, the test's plaintext clients, may
// do everything on it), so allow.everyone.if.no.acl.found does not cover
// them (without broker 3 in super.users, the test fails: checked by
// hand). Topics and groups have no ACL: everyone may use them.
func TestTLSCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster over TLS with leader kills")
	}
	t.Parallel()
	core, logs := observer.New(zapcore.WarnLevel)
	c := NewCluster(t, TLS(), LogTee(core), BrokerConfig(map[string]string{
		"authorizer.class.name":          acl.StandardAuthorizer,
		"super.users":                    "User:CN=broker1;User:CN=broker2;User:CN=broker3",
		"allow.everyone.if.no.acl.found": "true",
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created, err := c.Admin().CreateACLs(ctx, kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts("*").Clusters().Operations(kadm.OpAll))
	if err == nil {
		err = created[0].Err
	}
	if err != nil {
		t.Fatalf("creating the cluster ACL: %v", err)
	}

	t.Log("leader kill with acks=all over TLS")
	leaderLossLosesNothing(t, c, "tls-elect")

	t.Log("peers refused at the handshake")
	tester := c.CA().Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "tester"}})
	rogueCA := tlstest.NewCA(t, "rogue CA")
	rogue := rogueCA.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "rogue"}})
	b1 := c.Broker(1)
	// A certificate of the cluster's CA is accepted on INTERNAL (the
	// checks below can fail); on CONTROLLER only a super user's is.
	if err := refused(b1.InternalAddr(), clientTLS(c.CA(), tester)); err == nil {
		t.Fatalf("INTERNAL refused a certificate of the cluster's CA")
	}
	if err := refused(b1.ControllerAddr(), clientTLS(c.CA(), tester)); err != nil {
		t.Fatalf("CONTROLLER, a trusted certificate of no super user: %v", err)
	}
	waitLogged(t, c, logs, "controller refused a principal not in super.users", func(e observer.LoggedEntry) bool {
		return strings.Contains(e.Message, "the principal is not authorized") && e.ContextMap()["principal"] == "User:CN=tester"
	})
	for _, addr := range []string{b1.ControllerAddr(), b1.InternalAddr()} {
		for name, cfg := range map[string]*tls.Config{"no certificate": clientTLS(c.CA(), nil), "another CA": clientTLS(c.CA(), rogue)} {
			if err := refused(addr, cfg); err != nil {
				t.Fatalf("%s, %s: %v", addr, name, err)
			}
		}
	}
	waitLogged(t, c, logs, "controller refused no certificate", func(e observer.LoggedEntry) bool {
		m := e.ContextMap()
		return strings.HasPrefix(e.Message, "controller connection refused") && m["principal"] == "(no certificate)" && m["host"] == "127.0.0.1"
	})
	waitLogged(t, c, logs, "controller refused another CA", func(e observer.LoggedEntry) bool {
		m := e.ContextMap()
		return strings.HasPrefix(e.Message, "controller connection refused") && m["principal"] == "CN=rogue"
	})
	waitLogged(t, c, logs, "INTERNAL refused another CA", func(e observer.LoggedEntry) bool {
		m := e.ContextMap()
		return strings.HasPrefix(e.Message, "TLS handshake failed") && m["listener"] == InternalListener && strings.Contains(fmt.Sprint(m["error"]), "certificate of CN=rogue refused")
	})

	// Plaintext to the TLS controller port: the connection is closed.
	nc, err := net.DialTimeout("tcp", b1.ControllerAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("R\x00\x00\x00\x01plaintext raft"))
	if err := closedWithin(nc, 5*time.Second); err != nil {
		t.Fatalf("plaintext to the TLS controller port: %v", err)
	}
	waitLogged(t, c, logs, "plaintext refused", func(e observer.LoggedEntry) bool {
		return strings.HasPrefix(e.Message, "controller connection refused") && strings.Contains(fmt.Sprint(e.ContextMap()["error"]), "does not look like a TLS handshake")
	})
	// A peer that never finishes the handshake is cut after the timeout.
	nc, err = net.DialTimeout("tcp", b1.ControllerAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := closedWithin(nc, tlsHandshakeTimeout+5*time.Second); err != nil {
		t.Fatalf("silent peer on the TLS controller port: %v", err)
	}
	waitLogged(t, c, logs, "handshake timeout", func(e observer.LoggedEntry) bool {
		return strings.HasPrefix(e.Message, "controller connection refused") && strings.Contains(fmt.Sprint(e.ContextMap()["error"]), "no TLS handshake within 2s")
	})

	t.Log("broker 3 rotated to a certificate of another CA")
	const topic, parts = "tls-rogue", 3
	c.CreateTopic(topic, parts, 3, nil)
	all := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll := func(prefix string) {
		t.Helper()
		for p := int32(0); p < parts; p++ {
			produceSync(t, all, topic, p, prefix+fmt.Sprint(p))
		}
	}
	produceAll("before")
	b3 := c.Broker(3)
	replaceFile(t, b3.KeyStorePath(), rogue.KeyStore())
	waitServerCert(t, c, b3.ControllerAddr(), tester, "rogue")
	c.Isolate(3) // closes its open connections: the new ones take the new file
	c.Reconnect(3)
	c.WaitFor(30*time.Second, func() error {
		img := c.Broker(1).Image()
		if img.Live(3) {
			return errors.New("broker 3 is still live")
		}
		for p := int32(0); p < parts; p++ {
			if mp, _ := img.Partition(topic, p); slices.Contains(mp.ISR, 3) || mp.Leader == 3 {
				return fmt.Errorf("%s-%d still has broker 3: %+v", topic, p, mp)
			}
		}
		return nil
	})
	waitLogged(t, c, logs, "rogue broker 3 refused by the quorum", func(e observer.LoggedEntry) bool {
		m := e.ContextMap()
		return strings.HasPrefix(e.Message, "controller connection refused") && m["principal"] == "CN=rogue" && e.LoggerName != "broker3.controller.tls"
	})
	waitLogged(t, c, logs, "rogue broker 3's fetches refused", func(e observer.LoggedEntry) bool {
		return strings.HasPrefix(e.LoggerName, "broker3.kafka.replica") && strings.HasPrefix(e.Message, "replica fetcher cannot connect to the leader")
	})
	// The others keep serving. Through a client that learns the
	// leaders from broker 1: broker 3, cut off from the quorum, still
	// thinks it leads its partition, and a client that sent it an acks=all
	// produce (as `all` would, from its cached metadata) would wait out
	// the produce timeout (10s) before looking again.
	quorum := c.Client(kgo.SeedBrokers(c.Broker(1).Addr()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < parts; p++ {
		produceSync(t, quorum, topic, p, "during"+fmt.Sprint(p))
	}
	// Still out after the refusals were seen.
	if img := c.Broker(1).Image(); img.Live(3) {
		t.Fatal("broker 3 with a certificate of another CA is live")
	}

	t.Log("broker 3 rotated to a valid certificate")
	rotated := c.CA().Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker3"}})
	replaceFile(t, b3.KeyStorePath(), rotated.KeyStore())
	waitServerCertKey(t, c, b3.ControllerAddr(), tester, rotated)
	c.WaitFor(30*time.Second, func() error {
		img := c.Broker(1).Image()
		if !img.Live(3) {
			return errors.New("broker 3 is not live again")
		}
		for p := int32(0); p < parts; p++ {
			if isr := c.Partition(topic, p).ISR; !slices.Contains(isr, 3) {
				return fmt.Errorf("%s-%d: ISR %v without broker 3", topic, p, isr)
			}
		}
		return nil
	})
	produceAll("after")
	for p := int32(0); p < parts; p++ {
		want := []string{"before" + fmt.Sprint(p), "during" + fmt.Sprint(p), "after" + fmt.Sprint(p)}
		if got := consumeAll(t, c, topic, p, 3); !slices.Equal(got, want) {
			t.Fatalf("%s-%d: %v, want %v", topic, p, got, want)
		}
	}

	t.Log("broker 3 started with a certificate of another CA")
	c.Kill(3)
	replaceFile(t, b3.KeyStorePath(), rogue.KeyStore())
	logs.TakeAll() // what follows is from this start
	if err := c.TryRestart(3, 5*time.Second); err == nil || !strings.Contains(err.Error(), "controller quorum") {
		t.Fatalf("broker 3 with a certificate of another CA: start %v; want it to give up waiting for the quorum", err)
	}
	waitLogged(t, c, logs, "rogue broker 3's start refused by the quorum", func(e observer.LoggedEntry) bool {
		m := e.ContextMap()
		return strings.HasPrefix(e.Message, "controller connection refused") && m["principal"] == "CN=rogue" && e.LoggerName != "broker3.controller.tls"
	})
	produceAll("rogue") // the others serve on
	replaceFile(t, b3.KeyStorePath(), rotated.KeyStore())
	c.Restart(3)
	c.WaitFor(30*time.Second, func() error {
		for p := int32(0); p < parts; p++ {
			if isr := c.Partition(topic, p).ISR; !slices.Contains(isr, 3) {
				return fmt.Errorf("%s-%d: ISR %v without restarted broker 3", topic, p, isr)
			}
		}
		return nil
	})
}

// clientTLS is a test client's TLS configuration trusting ca, presenting
// cert (nil: none).
func clientTLS(ca *tlstest.CA, cert *tlstest.Issued) *tls.Config {
	cfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		c, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			panic(err)
		}
		// Sent whatever CAs the server names (a Go client would not send
		// a certificate of another CA on its own).
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	return cfg
}

// refused connects to addr with cfg and returns nil if the server refuses
// the connection at the handshake (with TLS 1.3 the client learns it at
// its first read), an error if the connection stays open.
func refused(addr string, cfg *tls.Config) error {
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil
	}
	defer tc.Close()
	tc.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	_, err = tc.Read(b[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("the connection was accepted")
	}
	return nil
}

// closedWithin waits for the server to close nc.
func closedWithin(nc net.Conn, d time.Duration) error {
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 512)
	for {
		_, err := nc.Read(buf)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return fmt.Errorf("still open after %v", d)
		case err != nil:
			return nil
		}
	}
}

// waitLogged waits for a log line matching match.
func waitLogged(t *testing.T, c *Cluster, logs *observer.ObservedLogs, what string, match func(observer.LoggedEntry) bool) {
	t.Helper()
	c.WaitFor(20*time.Second, func() error {
		if slices.ContainsFunc(logs.All(), match) {
			return nil
		}
		return fmt.Errorf("no log line: %s", what)
	})
}

// replaceFile replaces path's content at once (written aside, renamed),
// as a certificate deployment would.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".new-"+filepath.Base(path))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitServerCert waits until the TLS listener at addr presents a
// certificate named cn (a reload took the replaced file).
func waitServerCert(t *testing.T, c *Cluster, addr string, client *tlstest.Issued, cn string) {
	t.Helper()
	waitPresented(t, c, addr, client, func(cert *x509.Certificate) error {
		if got := cert.Subject.CommonName; got != cn {
			return fmt.Errorf("%s presents %s, want %s", addr, got, cn)
		}
		return nil
	})
}

// waitServerCertKey waits until the TLS listener at addr presents want.
func waitServerCertKey(t *testing.T, c *Cluster, addr string, client, want *tlstest.Issued) {
	t.Helper()
	waitPresented(t, c, addr, client, func(cert *x509.Certificate) error {
		if !cert.Equal(want.Cert) {
			return fmt.Errorf("%s presents serial %v, want the rotated %v", addr, cert.SerialNumber, want.Cert.SerialNumber)
		}
		return nil
	})
}

func waitPresented(t *testing.T, c *Cluster, addr string, client *tlstest.Issued, check func(*x509.Certificate) error) {
	t.Helper()
	cfg := clientTLS(c.CA(), client)
	cfg.InsecureSkipVerify = true // the rogue certificate is checked by name only
	c.WaitFor(10*time.Second, func() error {
		tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
		if err != nil {
			return err
		}
		defer tc.Close()
		return check(tc.ConnectionState().PeerCertificates[0])
	})
}
