package node

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/controller"
	"weir/broker/tlsconf/tlstest"
)

// TestListenersFromConfigs: the broker configs listeners,
// advertised.listeners, listener.security.protocol.map and ssl.* (with a
// per-listener override) give a PLAINTEXT and a TLS listener; each
// client is told about the brokers of its own listener.
func TestListenersFromConfigs(t *testing.T) {
	t.Parallel()
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "node test CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "node"}})
	keystore := tlstest.Write(t, dir, "node.pem", srv.KeyStore())
	n := startNode(t, Config{DataDir: t.TempDir(), AdminAddr: "off", RegistryAddr: "off", BrokerConfigs: map[string]string{
		"listeners":                                  "LOCAL://127.0.0.1:0,SECURE://127.0.0.1:0",
		"listener.security.protocol.map":             "LOCAL:PLAINTEXT,SECURE:SSL",
		"inter.broker.listener.name":                 "LOCAL",
		"ssl.keystore.location":                      "/nonexistent/overridden.pem",
		"listener.name.secure.ssl.keystore.location": keystore,
		"ssl.enabled.protocols":                      "TLSv1.3",
	}})
	addrs := n.ListenerAddrs()
	if len(addrs) != 2 || addrs["LOCAL"] == "" || addrs["SECURE"] == "" {
		t.Fatalf("listener addresses %v", addrs)
	}
	if n.KafkaAddr() != addrs["LOCAL"] {
		t.Fatalf("KafkaAddr %s; want the PLAINTEXT listener %s", n.KafkaAddr(), addrs["LOCAL"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, opts := range map[string][]kgo.Opt{
		"LOCAL":  {kgo.SeedBrokers(addrs["LOCAL"])},
		"SECURE": {kgo.SeedBrokers(addrs["SECURE"]), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13})},
	} {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
		cl.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(brokers) != 1 || brokers[0].Host+":"+itoa(brokers[0].Port) != addrs[name] {
			t.Fatalf("%s: brokers %+v; want %s", name, brokers, addrs[name])
		}
	}
	// TLS 1.2 is not enabled on SECURE.
	if c, err := tls.Dial("tcp", addrs["SECURE"], &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MaxVersion: tls.VersionTLS12}); err == nil {
		c.Close()
		t.Fatal("TLS 1.2 handshake succeeded with ssl.enabled.protocols=TLSv1.3")
	}
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// TestListenerConfigErrors: bad listener and TLS settings stop the start
// with an error naming the setting, and secrets are not in it.
func TestListenerConfigErrors(t *testing.T) {
	t.Parallel()
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "errors CA")
	keystore := tlstest.Write(t, dir, "k.pem", ca.Issue(t, tlstest.Leaf{}).KeyStore())
	for _, c := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"}, "each listener must have a different name"},
		{map[string]string{"listeners": "SSL://127.0.0.1:0"}, "inter.broker.listener.name must be a listener name defined in advertised.listeners"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}, "listener SSL is SSL but has no key store"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"}, "sasl.enabled.mechanisms is not set"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_a="c2VjcmV0" bad`}, "expected <name>=<value>"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": keystore, "ssl.client.auth": "required"},
			"ssl.client.auth=required needs a trust store"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": keystore, "ssl.keystore.type": "JKS"},
			"ssl.keystore.type"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "listener.name.ssl.ssl.keystore.location": keystore,
			"listener.name.ssl.ssl.enabled.protocols": "TLSv1.1"}, "listener.name.ssl.ssl.enabled.protocols: TLSv1.1 is not supported"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": keystore,
			"ssl.principal.mapping.rules": "RULE:bad"}, "ssl.principal.mapping.rules: invalid rule"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.location": keystore,
			"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ==\n-----END PRIVATE KEY-----\n"}, "not both"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.keystore.certificate.chain": string(ca.PEM),
			"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ==\n-----END PRIVATE KEY-----\n"}, "ssl.keystore.certificate.chain/ssl.keystore.key"},
	} {
		_, err := Start(context.Background(), Config{DataDir: t.TempDir(), AdminAddr: "off", RegistryAddr: "off", BrokerConfigs: c.cfg})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want an error containing %q", c.cfg, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("error shows the key: %v", err)
		}
	}
	// The shorthand and listeners together.
	_, err := Start(context.Background(), Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", AdminAddr: "off", RegistryAddr: "off",
		BrokerConfigs: map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0"}})
	if err == nil || !strings.Contains(err.Error(), "--kafka-addr") {
		t.Errorf("KafkaAddr and listeners: %v", err)
	}
}

// TestControllerListener: in a cluster (here of one voter), the listener
// named in controller.listener.names is the controller (Raft) address,
// not advertised to clients; an SSL controller listener needs a key
// store, and SASL is refused on it.
func TestControllerListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctrlAddr := ln.Addr().String()
	ln.Close() // the node binds it again from listeners
	voters := []controller.Voter{{ID: 1, Addr: ctrlAddr}}
	n := startNode(t, Config{NodeID: 1, DataDir: t.TempDir(), AdminAddr: "off", RegistryAddr: "off",
		Controller: &ControllerConfig{Voters: voters, NoWait: true},
		BrokerConfigs: map[string]string{
			"listeners":                 "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ctrlAddr,
			"controller.listener.names": "CONTROLLER",
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.Controller().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if addrs := n.ListenerAddrs(); len(addrs) != 1 || addrs["PLAINTEXT"] == "" {
		t.Fatalf("Kafka listeners %v; the controller listener is not one", addrs)
	}
	b, ok := n.Metadata().Image().Broker(1)
	if !ok || len(b.Endpoints) != 1 || b.Endpoints[0].Listener != "PLAINTEXT" {
		t.Fatalf("registration %+v", b)
	}

	for proto, want := range map[string]string{
		"SSL":      "listener CONTROLLER is SSL but has no key store",
		"SASL_SSL": "controller quorum over SASL is not supported",
	} {
		_, err = Start(context.Background(), Config{NodeID: 1, DataDir: t.TempDir(), AdminAddr: "off", RegistryAddr: "off",
			Controller: &ControllerConfig{Voters: voters, NoWait: true},
			BrokerConfigs: map[string]string{
				"listeners":                      "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
				"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:" + proto,
				"controller.listener.names":      "CONTROLLER",
			}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s controller listener: %v; want %q", proto, err, want)
		}
	}
}
