package kafkaclient_test

import (
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/brokertest/testbroker"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkaclient"
	"weir/internal/pemfile"
)

// tlsPeer is a broker with a PLAINTEXT listener and an SSL one that
// requires a client certificate signed by ca.
type tlsPeer struct {
	b       *testbroker.Broker
	ca      *tlstest.CA
	dir     string
	caFile  string
	sslAddr string
}

func startTLSPeer(t *testing.T) *tlsPeer {
	t.Helper()
	p := &tlsPeer{dir: tlstest.Dir(t), ca: tlstest.NewCA(t, "client test CA")}
	srv := p.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1", "broker.weir.test"}})
	p.caFile = tlstest.Write(t, p.dir, "ca.pem", p.ca.PEM)
	p.b = testbroker.Start(t, testbroker.Listeners("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", map[string]string{
		"ssl.keystore.location":   tlstest.Write(t, p.dir, "broker.pem", srv.KeyStore()),
		"ssl.truststore.location": p.caFile,
		"ssl.client.auth":         "required",
	}))
	p.sslAddr = p.b.ListenerAddr("SSL")
	return p
}

func ping(t *testing.T, o kafkaclient.Options) error {
	t.Helper()
	o.RetryTimeout, o.DialTimeout = 3*time.Second, 3*time.Second
	cl, err := kafkaclient.New(o)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// TestTLSToWeirListener: clients configured with Kafka's client
// properties (as a --command-config file holds them) reach weir's SSL
// listener with mutual TLS and an encrypted client key, produce and
// consume; without a client certificate, with another CA, or with a
// host name the certificate does not carry, they do not get in.
func TestTLSToWeirListener(t *testing.T) {
	t.Parallel()
	p := startTLSPeer(t)
	client := p.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "pipeline"}})
	const keyPass = "k3y-pa55-Zq9"
	keystore := tlstest.Write(t, p.dir, "client.pem", tlstest.EncryptKey(t, client.KeyPEM, keyPass), client.CertPEM)
	props := tlstest.Write(t, p.dir, "client.properties", []byte(fmt.Sprintf(`# as for kafka-topics --command-config
bootstrap.servers=%s
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=%s
ssl.keystore.type=PEM
ssl.keystore.location=%s
ssl.key.password=%s
linger.ms=5
`, p.sslAddr, escapeProp(p.caFile), escapeProp(keystore), keyPass)))
	m, err := kafkaclient.ReadPropertiesFile(props)
	if err != nil {
		t.Fatal(err)
	}
	set, ignored, err := kafkaclient.ParseProperties(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(ignored) != 1 || ignored[0] != "linger.ms" {
		t.Errorf("ignored = %v, want [linger.ms]", ignored)
	}
	o := set.Options(kafkaclient.Options{Brokers: []string{"127.0.0.1:1"}})
	if o.Brokers[0] != p.sslAddr {
		t.Fatalf("brokers %v: bootstrap.servers not applied", o.Brokers)
	}
	p.b.CreateTopic("secured", 1, nil)
	cl, err := kafkaclient.New(o, kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "secured", Value: []byte("over TLS")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil || fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "over TLS" {
		t.Fatalf("consume over TLS: %v, %d records", err, fs.NumRecords())
	}

	t.Run("refused", func(t *testing.T) {
		other := tlstest.NewCA(t, "another CA")
		otherCA := tlstest.Write(t, p.dir, "other-ca.pem", other.PEM)
		base := kafkaclient.Options{Brokers: []string{p.sslAddr}}
		for name, sec := range map[string]kafkaclient.Security{
			"no client certificate": {Protocol: "SSL", TLS: pemfile.Client{CAFile: p.caFile}},
			"untrusted server":      {Protocol: "SSL", TLS: pemfile.Client{CAFile: otherCA, CertFile: keystore, KeyPassword: keyPass}},
			"wrong server name":     {Protocol: "SSL", TLS: pemfile.Client{CAFile: p.caFile, CertFile: keystore, KeyPassword: keyPass, ServerName: "elsewhere.weir.test"}},
		} {
			o := base
			o.Security = sec
			err := ping(t, o)
			if err == nil {
				t.Errorf("%s: connected", name)
			}
			t.Logf("%s: %v", name, err)
		}
		// Plaintext to the SSL listener does not get an answer either.
		if err := ping(t, base); err == nil {
			t.Error("plaintext to the SSL port: connected")
		}
	})
	t.Run("server name and hostname check", func(t *testing.T) {
		for name, tc := range map[string]pemfile.Client{
			"ssl.server.name":                          {ServerName: "broker.weir.test"},
			"ssl.endpoint.identification.algorithm=''": {ServerName: "elsewhere.weir.test", NoHostnameCheck: true},
			"ssl.insecure.skip.verify":                 {InsecureSkipVerify: true},
		} {
			tc.CertFile, tc.KeyPassword = keystore, keyPass
			if !tc.InsecureSkipVerify {
				tc.CAFile = p.caFile
			}
			if err := ping(t, kafkaclient.Options{Brokers: []string{p.sslAddr}, Security: kafkaclient.Security{Protocol: "SSL", TLS: tc}}); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	t.Run("wrong key password", func(t *testing.T) {
		o := kafkaclient.Options{Brokers: []string{p.sslAddr}, Security: kafkaclient.Security{Protocol: "SSL",
			TLS: pemfile.Client{CAFile: p.caFile, CertFile: keystore, KeyPassword: "not-the-" + keyPass}}}
		_, err := kafkaclient.New(o)
		if err == nil || !strings.Contains(err.Error(), "ssl.key.password") || strings.Contains(err.Error(), keyPass) {
			t.Errorf("err = %v, want one naming ssl.key.password without the password", err)
		}
	})
}

func escapeProp(s string) string {
	return strings.NewReplacer(`\`, `\\`, ":", `\:`, "=", `\=`, " ", `\ `).Replace(s)
}

func TestParsePropertiesText(t *testing.T) {
	m, err := kafkaclient.ParsePropertiesText(`# comment
! also a comment
  security.protocol = SASL_SSL
sasl.mechanism:SCRAM-SHA-512
sasl.username alice
sasl.password=p\=a\:s\\s\u00e9 word
ssl.truststore.location=/etc/ca\
    /bundle.pem
empty=
`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
		"sasl.password": `p=a:s\sé word`, "ssl.truststore.location": "/etc/ca/bundle.pem", "empty": ""}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("got %q\nwant %q", m, want)
	}
	if _, err := kafkaclient.ParsePropertiesText("k=\\u12"); err == nil {
		t.Error(`bad \u escape accepted`)
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	const secret = "Sup3r-Secr3t-Value"
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"security.protocol": "SSH"}, "security.protocol"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": secret}, "sasl.mechanism"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.password": secret}, "sasl.mechanism"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.password": secret}, "sasl.username"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "sasl.oauthbearer.token"},
		{map[string]string{"sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": secret}, "security.protocol"},
		{map[string]string{"ssl.truststore.location": "/ca.pem"}, "security.protocol"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "JKS"}, "ssl.truststore.type"},
		{map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "http"}, "ssl.endpoint.identification.algorithm"},
		{map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + secret + `";`}, "sasl.username"},
		{map[string]string{"basic.auth.user.info": secret}, "basic.auth.user.info"},
		{map[string]string{"basic.auth.credentials.source": "SASL_INHERIT"}, "USER_INFO"},
	} {
		_, _, err := kafkaclient.ParseProperties(c.props)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("%v: err = %v, want one naming %s without the secret", c.props, err, c.want)
		}
	}
}

// TestSecretsNeverPrinted: client settings printed by mistake (fmt,
// JSON, zap) show no password, token or key.
func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "Sup3r-Secr3t-Value"
	set, _, err := kafkaclient.ParseProperties(map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
		"sasl.username": "alice", "sasl.password": secret, "ssl.key.password": secret, "ssl.keystore.key": secret,
		"schema.registry.url": "https://r:8081", "basic.auth.user.info": "bob:" + secret})
	if err != nil {
		t.Fatal(err)
	}
	o := set.Options(kafkaclient.Options{Brokers: []string{"b:9092"}})
	core, logs := observer.New(zap.DebugLevel)
	zap.New(core).Info("client", zap.Any("options", o.Security), zap.Any("registry", set.Registry), zap.Reflect("o", o.Security))
	js, _ := json.Marshal(set)
	out := fmt.Sprintf("%v %+v %#v %s %q %s", o, o, set, set.Security.SASL.Password, set.Registry.Password, js)
	for _, e := range logs.All() {
		js, _ := json.Marshal(e.ContextMap())
		out += string(js)
	}
	if strings.Contains(out, secret) {
		t.Errorf("secret printed: %s", out)
	}
	if !strings.Contains(out, "alice") || !strings.Contains(out, pemfile.Redacted) {
		t.Errorf("output lacks the user or the redaction mark: %s", out)
	}
	red := kafkaclient.Redact(map[string]string{"sasl.password": secret, "sasl.username": "alice", "basic.auth.user.info": "u:" + secret})
	if strings.Contains(fmt.Sprint(red), secret) || red["sasl.username"] != "alice" {
		t.Errorf("Redact = %v", red)
	}
}

// TestOAuthTokenFileReread: an OAUTHBEARER token file is read at each
// authentication, so a renewed token is sent by the next one.
func TestOAuthTokenFileReread(t *testing.T) {
	dir := t.TempDir()
	path := tlstest.Write(t, dir, "token", []byte("first.jwt.token\n"))
	o := kafkaclient.Options{Brokers: []string{"127.0.0.1:1"}, Security: kafkaclient.Security{Protocol: "SASL_PLAINTEXT",
		SASL: kafkaclient.SASL{Mechanism: "OAUTHBEARER", TokenFile: path}}}
	cl, err := kafkaclient.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	vals := cl.OptValues(kgo.SASL)
	if len(vals) != 1 {
		t.Fatalf("SASL option values %v", vals)
	}
	mechs, ok := vals[0].([]sasl.Mechanism)
	if !ok || len(mechs) != 1 || mechs[0].Name() != "OAUTHBEARER" {
		t.Fatalf("SASL mechanisms %v", vals[0])
	}
	first := authMessage(t, mechs[0])
	if err := os.WriteFile(path, []byte("second.jwt.token"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := authMessage(t, mechs[0])
	if !strings.Contains(first, "auth=Bearer first.jwt.token\x01") || !strings.Contains(second, "auth=Bearer second.jwt.token\x01") {
		t.Errorf("client-first messages %q, %q", first, second)
	}
	os.Remove(path)
	if _, _, err := mechs[0].Authenticate(context.Background(), "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "sasl.oauthbearer.token.file") {
		t.Errorf("token file gone: err = %v", err)
	}
}

func authMessage(t *testing.T, m sasl.Mechanism) string {
	t.Helper()
	_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	return string(msg)
}
