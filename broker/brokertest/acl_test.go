package brokertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/acl"
)

// TestACLCluster: ACLs on in a 3-broker cluster whose replication runs
// over mutual TLS. The brokers' certificate principals are super users
// (as Kafka documents), so follower fetches (CLUSTER_ACTION) go through:
// the leader-kill test loses nothing. An ACL created through one broker
// is on every broker (replicated metadata) and enforced by each.
func TestACLCluster(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	c := NewCluster(t, TLS(), LogTee(core), BrokerConfig(map[string]string{
		acl.ConfigClassName:     acl.StandardAuthorizer,
		acl.ConfigSuperUsers:    "User:CN=broker1;User:CN=broker2;User:CN=broker3",
		acl.ConfigAllowIfNoACLs: "true",
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.Client())
	// The producer may see the topic (DESCRIBE), so its produce reaches
	// each partition's leader, which refuses it.
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics("acl-forbidden").Deny("User:ANONYMOUS").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Topics("acl-forbidden").Allow("User:ANONYMOUS").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil || res[0].Err != nil {
			t.Fatalf("CreateAcls: %v %+v", err, res)
		}
	}
	c.WaitFor(20*time.Second, func() error {
		for id := int32(1); id <= 3; id++ {
			if n := c.Broker(id).Image().NumACLs(); n != 2 {
				return fmt.Errorf("broker %d has %d ACLs", id, n)
			}
		}
		return nil
	})

	leaderLossLosesNothing(t, c, "acl-elect")

	c.CreateTopic("acl-forbidden", 3, 3, nil)
	cl := c.Client(kgo.RecordRetries(2), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 3; p++ { // each partition has another leader
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "acl-forbidden", Partition: p, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("produce to acl-forbidden/%d: %v, want TOPIC_AUTHORIZATION_FAILED", p, err)
		}
	}
	audit := logs.Filter(func(e observer.LoggedEntry) bool { return strings.HasSuffix(e.LoggerName, acl.AuditLoggerName) })
	// Each leader refused its partition (and logged it).
	for id := int32(1); id <= 3; id++ {
		name := fmt.Sprintf("broker%d.%s", id, acl.AuditLoggerName)
		if audit.FilterLoggerName(name).FilterMessage("authorization denied").Len() == 0 {
			t.Errorf("no denial in broker %d's audit log", id)
		}
	}
	for _, e := range audit.FilterMessage("authorization denied").All() {
		if m := e.ContextMap(); m["operation"] != "WRITE" || m["resource_name"] != "acl-forbidden" || m["request"] != "Produce" {
			t.Errorf("unexpected denial: %v", m)
		}
	}

	// DeleteAcls through the controller: the leader decides what the
	// filter matched, every broker drops it.
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("acl-forbidden").Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 || del[0].Deleted[0].Operation != kadm.OpWrite {
		t.Fatalf("DeleteAcls: %v %+v", err, del)
	}
	waitACLs := func(want int) {
		c.WaitFor(20*time.Second, func() error {
			for id := int32(1); id <= 3; id++ {
				if n := c.Broker(id).Image().NumACLs(); n != want {
					return fmt.Errorf("broker %d has %d ACLs, want %d", id, n, want)
				}
			}
			return nil
		})
	}
	waitACLs(1)
	// The ALLOW DESCRIBE left still names the topic: WRITE stays denied
	// (allow.everyone.if.no.acl.found applies to resources no ACL names).
	produce := func() error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "acl-forbidden", Partition: 0, Value: []byte("x")}).FirstErr()
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce with only ALLOW DESCRIBE left: %v", err)
	}
	if _, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); err != nil {
		t.Fatal(err)
	}
	waitACLs(0)
	if err := produce(); err != nil {
		t.Fatalf("produce once no ACL names the topic: %v", err)
	}
}
