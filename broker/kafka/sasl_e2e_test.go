package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/acl"
	"weir/broker/metadata"
	"weir/broker/sasl"
)

// saslBroker is a broker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL
// listeners, its logs observed (audit lines, authentications) and a clock
// tests can move forward.
type saslBroker struct {
	*testBroker
	tls    *tlsSetup
	logs   *observer.ObservedLogs
	offset atomic.Int64 // added to the server's clock
}

// saslConfigs are the SASL settings of the test listeners: PLAIN users
// admin and alice, both SCRAM mechanisms.
func saslConfigs(extra ...string) map[string]string {
	m := map[string]string{
		sasl.EnabledMechanisms: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		sasl.JAASConfig:        `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-plain";`,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func startSASLBroker(t testing.TB, configs map[string]string, opts ...brokerOpt) *saslBroker {
	t.Helper()
	sb := &saslBroker{tls: newTLSSetupTB(t)}
	ts := withTLSOut(t, sb.tls.settings(), nil)
	core, logs := observer.New(zap.DebugLevel)
	sb.logs = logs
	opt := func(c *Config) {
		ts(c)
		c.Logger = zap.New(zapcore.NewTee(c.Logger.Core(), core))
		c.Now = func() time.Time { return time.Now().Add(time.Duration(sb.offset.Load())) }
		audit := sasl.NewAudit(c.Logger, time.Minute, 1000)
		meta := c.Metadata
		store := sasl.MetadataStore(func() *metadata.Image { return meta.Image() })
		for _, name := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
			sc, err := sasl.Parse(name, configs)
			if err != nil {
				t.Fatal(err)
			}
			sc.Now = c.Now
			srv, err := sasl.NewServer(sc, store, audit)
			if err != nil {
				t.Fatal(err)
			}
			l := Listener{Name: name, Protocol: name, Addr: "127.0.0.1:0", SASL: srv}
			if name == "SASL_SSL" {
				l.TLS = c.Listeners[1].TLS
			}
			c.Listeners = append(c.Listeners, l)
		}
	}
	sb.testBroker = startBroker(t, append([]brokerOpt{opt}, opts...)...)
	return sb
}

// addScram creates SCRAM users through AlterUserScramCredentials on the
// PLAINTEXT listener.
func (b *saslBroker) addScram(t testing.TB, mech kadm.ScramMechanism, user, password string) {
	t.Helper()
	adm := kadm.NewClient(b.client())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 4096, Password: password}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.User, r.Err)
		}
	}
}

// saslClient is a franz-go client on a SASL listener.
func (b *saslBroker) saslClient(t testing.TB, listener string, m kgo.Opt, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(b.listenerAddr(listener)), m, kgo.RetryTimeout(5 * time.Second)}
	if listener == "SASL_SSL" {
		o = append(o, kgo.DialTLSConfig(&tls.Config{RootCAs: b.tls.ca.Pool(), ServerName: "127.0.0.1"}))
	}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// authenticated reports whether the log shows principal authenticated.
func (b *saslBroker) authenticated(principal, mechanism string) bool {
	for _, e := range b.logs.FilterMessage("SASL authentication succeeded").All() {
		m := e.ContextMap()
		if m["principal"] == principal && m["mechanism"] == mechanism {
			return true
		}
	}
	return false
}

// auditLines returns the audit log's failed authentications.
func (b *saslBroker) auditLines() []map[string]any {
	var out []map[string]any
	for _, e := range b.logs.FilterLoggerName(sasl.AuditLoggerName).All() {
		out = append(out, e.ContextMap())
	}
	return out
}

// TestSASLFranz: franz-go's PLAIN and SCRAM clients produce and consume
// over SASL_PLAINTEXT and SASL_SSL, as the principal they authenticated
// as; a wrong password fails with SASL_AUTHENTICATION_FAILED and Kafka's
// message, is audited without the password, and the broker serves on.
func TestSASLFranz(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, saslConfigs())
	b.addScram(t, kadm.ScramSha512, "alice", "alice-secret")
	b.addScram(t, kadm.ScramSha256, "bob", "bob-secret")
	cases := []struct {
		name, listener, mech, principal string
		opt                             kgo.Opt
	}{
		{"SCRAM-SHA-512 over SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "User:alice", kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())},
		{"SCRAM-SHA-512 over SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-512", "User:alice", kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())},
		{"SCRAM-SHA-256 over SASL_SSL", "SASL_SSL", "SCRAM-SHA-256", "User:bob", kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism())},
		{"PLAIN over SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAIN", "User:admin", kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := fmt.Sprintf("sasl-%d", i)
			createTopic(t, b.testBroker, topic, 1, nil)
			cl := b.saslClient(t, c.listener, c.opt)
			produceConsume(t, cl, topic, 50)
			if !b.authenticated(c.principal, c.mech) {
				t.Fatalf("no authentication of %s with %s logged", c.principal, c.mech)
			}
		})
	}
	bad := []struct {
		name, mech, msg string
		opt             kgo.Opt
	}{
		{"wrong SCRAM password", "SCRAM-SHA-512", "Authentication failed: Invalid user credentials", kgo.SASL(scram.Auth{User: "alice", Pass: "wrong-pw-123"}.AsSha512Mechanism())},
		{"unknown SCRAM user", "SCRAM-SHA-256", "Authentication failed: Invalid user credentials", kgo.SASL(scram.Auth{User: "mallory", Pass: "wrong-pw-123"}.AsSha256Mechanism())},
		{"wrong PLAIN password", "PLAIN", "Authentication failed: Invalid username or password", kgo.SASL(plain.Auth{User: "alice", Pass: "wrong-pw-123"}.AsMechanism())},
		// SCRAM users are not PLAIN users.
		{"SCRAM user with PLAIN", "PLAIN", "Authentication failed: Invalid username or password", kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism())},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			cl := b.saslClient(t, "SASL_SSL", c.opt)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := cl.Ping(ctx)
			if err == nil {
				t.Fatal("authenticated")
			}
			if !strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want SASL_AUTHENTICATION_FAILED: %s", err, c.msg)
			}
		})
	}
	lines := b.auditLines()
	if len(lines) < len(bad) {
		t.Fatalf("%d audit lines for %d failures: %v", len(lines), len(bad), lines)
	}
	for _, l := range lines {
		s := strings.ToLower(strings.Join([]string{l["principal"].(string), l["reason"].(string), l["host"].(string), l["listener"].(string), l["mechanism"].(string)}, " "))
		if strings.Contains(s, "wrong-pw") || strings.Contains(s, "secret") {
			t.Fatalf("audit line holds a password: %v", l)
		}
		if l["host"] != "127.0.0.1" || l["listener"] != "SASL_SSL" || l["mechanism"] == "" || l["reason"] == "" {
			t.Fatalf("audit line incomplete: %v", l)
		}
	}
	// The broker serves on.
	createTopic(t, b.testBroker, "sasl-after", 1, nil)
	produceConsume(t, b.saslClient(t, "SASL_SSL", cases[0].opt), "sasl-after", 10)
}

// TestSASLScramAdmin: AlterUserScramCredentials and
// DescribeUserScramCredentials with Kafka's per-user errors; credentials
// are stored salted (no password or salted password in the metadata).
func TestSASLScramAdmin(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, saslConfigs())
	r := dialRaw(t, b.addr)
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := func(name string, mech int8, iters int32, saltedLen int) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = name, mech, iters
		u.Salt, u.SaltedPassword = []byte("0123456789abcdef"), make([]byte, saltedLen)
		for i := range u.SaltedPassword {
			u.SaltedPassword[i] = byte(i + 1)
		}
		return u
	}
	alter.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("carol", 1, 8192, 32),
		up("dave", 2, 4096, 64), up("dave", 1, 4096, 32), // twice
		up("erin", 1, 100, 32),    // too few iterations
		up("frank", 1, 20000, 32), // too many
		up("", 1, 4096, 32),
		up("gina", 3, 4096, 32), // unknown mechanism
	}
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "nobody", 1
	alter.Deletions = append(alter.Deletions, del)
	resp := r.roundTrip(alter).(*kmsg.AlterUserSCRAMCredentialsResponse)
	want := map[string]*kerr.Error{
		"carol": nil, "dave": kerr.DuplicateResource, "erin": kerr.UnacceptableCredential, "frank": kerr.UnacceptableCredential,
		"": kerr.UnacceptableCredential, "gina": kerr.UnsupportedSaslMechanism, "nobody": kerr.ResourceNotFound,
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Results), len(want), resp.Results)
	}
	for _, res := range resp.Results {
		w, ok := want[res.User]
		if !ok {
			t.Fatalf("result for %q", res.User)
		}
		if got := kerr.ErrorForCode(res.ErrorCode); got != w && !(w == nil && res.ErrorCode == 0) {
			t.Errorf("%q: %v (%v), want %v", res.User, got, res.ErrorMessage, w)
		}
	}
	c, ok := b.meta.Image().ScramCredential("carol", sasl.ScramSHA256)
	if !ok || c.Iterations != 8192 || len(c.StoredKey) != 32 || len(c.ServerKey) != 32 {
		t.Fatalf("carol's credential: %+v %v", c, ok)
	}
	if _, ok := b.meta.Image().ScramCredential("dave", sasl.ScramSHA512); ok {
		t.Fatal("dave stored despite DUPLICATE_RESOURCE")
	}
	b.addScram(t, kadm.ScramSha512, "carol", "carol-secret")

	desc := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	dresp := r.roundTrip(desc).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if len(dresp.Results) != 1 || dresp.Results[0].User != "carol" || len(dresp.Results[0].CredentialInfos) != 2 {
		t.Fatalf("describe all: %+v", dresp.Results)
	}
	for _, name := range []string{"carol", "nobody", "carol"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = name
		desc.Users = append(desc.Users, u)
	}
	dresp = r.roundTrip(desc).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	got := map[string]int16{}
	for _, res := range dresp.Results {
		got[res.User] = res.ErrorCode
	}
	if got["carol"] != kerr.DuplicateResource.Code || got["nobody"] != kerr.ResourceNotFound.Code || len(got) != 2 {
		t.Fatalf("describe carol, nobody, carol: %v", got)
	}
	// Deleting works, and deleting again is RESOURCE_NOT_FOUND.
	adm := kadm.NewClient(b.client())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, wantErr := range []error{nil, kerr.ResourceNotFound} {
		res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res["carol"].Err; got != wantErr {
			t.Fatalf("delete %d: %v, want %v", i, got, wantErr)
		}
	}
	// The metadata file holds no password.
	raw, err := os.ReadFile(b.dir + "/" + metadata.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "carol-secret") {
		t.Fatal("the metadata holds a password")
	}
}

// TestSASLPrincipalAuthorized: the SASL principal is the one the
// authorizer sees: with ACLs on, the super user admin (PLAIN) may alter
// SCRAM credentials, alice (SCRAM) gets CLUSTER_AUTHORIZATION_FAILED for
// the alter and the describe, as Kafka answers.
func TestSASLPrincipalAuthorized(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, saslConfigs(), func(c *Config) {
		c.Authorizer = acl.New(acl.Config{SuperUsers: []string{"User:admin", "User:ANONYMOUS"}}, nil)
	})
	b.addScram(t, kadm.ScramSha512, "alice", "alice-secret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := kadm.NewClient(b.saslClient(t, "SASL_SSL", kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())))
	res, err := alice.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}})
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && res["carol"].Err != kerr.ClusterAuthorizationFailed {
		t.Fatalf("alice altering: %v %v", err, res)
	}
	if _, err := alice.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice describing: %v", err)
	}
	admin := kadm.NewClient(b.saslClient(t, "SASL_PLAINTEXT", kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	res, err = admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"}})
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("admin altering: %v %v", err, res)
	}
	d, err := admin.DescribeUserSCRAMs(ctx)
	if err != nil || len(d) != 2 || d["carol"].CredInfos[0].Iterations != 4096 {
		t.Fatalf("admin describing: %v %+v", err, d)
	}
}
