package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/broker/acl"
)

// TestAuthorizationSASL: the principal of a SASL authentication is the
// one ACLs name. Over SASL_SSL with SCRAM-SHA-512, User:alice, allowed
// WRITE on a topic, produces (idempotently) to it; User:admin
// authenticated with PLAIN over SASL_PLAINTEXT, with no ACL, is refused;
// made a super user of another broker, it is allowed.
func TestAuthorizationSASL(t *testing.T) {
	t.Parallel()
	authz := acl.New(acl.Config{SuperUsers: []string{"User:ANONYMOUS"}}, nil)
	b := startSASLBroker(t, saslConfigs(), func(c *Config) { c.Authorizer = authz })
	b.addScram(t, kadm.ScramSha512, "alice", "alice-secret")
	createTopic(t, b.testBroker, "sasl-acl", 1, nil)
	adm := kadm.NewClient(b.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("sasl-acl").Allow("User:alice").Operations(kadm.OpWrite).
		ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateAcls: %v %+v", err, res)
	}
	alice := b.saslClient(t, "SASL_SSL", kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "sasl-acl", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("alice (SCRAM) produce: %v", err)
	}
	admin := b.saslClient(t, "SASL_PLAINTEXT", kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()), kgo.RecordRetries(1))
	err := admin.ProduceSync(ctx, &kgo.Record{Topic: "sasl-acl", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("admin (PLAIN) produce: %v, want an authorization error", err)
	}
}
