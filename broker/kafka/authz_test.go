package kafka

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/acl"
)

func produceOne(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
}

// TestAuthorizationPrefixedAndDeny: an idempotent franz-go producer
// allowed WRITE on a prefix writes under it (InitProducerId passes on
// WRITE to some topic), not to the topic a DENY takes out of it, nor
// outside it.
func TestAuthorizationPrefixedAndDeny(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	for _, tp := range []string{"logs-app", "logs-secret", "other"} {
		withTopic(t, b, tp)
	}
	b.grant(t, rule("User:alice", acl.OpWrite, acl.ResourceTopic, "logs-", acl.PatternPrefixed),
		deny(rule("User:alice", acl.OpWrite, acl.ResourceTopic, "logs-secret", acl.PatternLiteral)))
	alice := b.as(t, "alice", kgo.RecordRetries(1))
	if err := produceOne(t, alice, "logs-app"); err != nil {
		t.Fatalf("produce under the prefix: %v", err)
	}
	for _, tp := range []string{"logs-secret", "other"} {
		if err := produceOne(t, alice, tp); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("produce to %s: %v, want TOPIC_AUTHORIZATION_FAILED", tp, err)
		}
	}
	// The DENY of WRITE does not deny DESCRIBE: the topic is visible.
	md := request[*kmsg.MetadataResponse](t, alice, metadataReq(false)("logs-secret"))
	if md.Topics[0].ErrorCode != 0 {
		t.Errorf("Metadata of logs-secret: %d", md.Topics[0].ErrorCode)
	}
}

// TestAuthorizationSuperUser: a super user (a client certificate's
// principal in super.users) does anything, DENY ACLs notwithstanding.
func TestAuthorizationSuperUser(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{SuperUsers: []string{"User:root"}})
	withTopic(t, b, "t")
	b.grant(t, deny(rule(acl.WildcardPrincipal, acl.OpAll, acl.ResourceTopic, "t", acl.PatternLiteral)))
	if err := produceOne(t, b.as(t, "root"), "t"); err != nil {
		t.Fatalf("super user produce: %v", err)
	}
	if err := produceOne(t, b.as(t, "alice", kgo.RecordRetries(1)), "t"); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice: %v, want an authorization error", err)
	}
}

// TestAuthorizationAllowEveryoneIfNoACL: with
// allow.everyone.if.no.acl.found a resource no ACL names is open to all,
// one that some ACL names is not; without it nothing is open.
func TestAuthorizationAllowEveryoneIfNoACL(t *testing.T) {
	t.Parallel()
	for _, open := range []bool{true, false} {
		b := startACLBroker(t, acl.Config{AllowIfNoACLs: open})
		withTopic(t, b, "free")
		withTopic(t, b, "owned")
		b.grant(t, rule("User:owner", acl.OpWrite, acl.ResourceTopic, "owned", acl.PatternLiteral))
		carol := b.as(t, "carol", kgo.RecordRetries(1))
		err := produceOne(t, carol, "free")
		if open && err != nil {
			t.Errorf("open: produce to a topic without ACLs: %v", err)
		}
		if !open && !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("closed: produce to a topic without ACLs: %v, want an authorization error", err)
		}
		if err := produceOne(t, carol, "owned"); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Errorf("open=%v: produce to another's topic: %v, want an authorization error", open, err)
		}
	}
}

// TestAuthorizationHidesAndReports: an all-topics Metadata lists only
// the topics the client may describe; ListGroups only its groups; the
// authorized-operations fields of Metadata, DescribeCluster and
// DescribeGroups say what it may do.
func TestAuthorizationHidesAndReports(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	for _, tp := range []string{"mine", "theirs"} {
		withCommit(t, b, tp)
	}
	b.grant(t, rule("User:alice", acl.OpRead, acl.ResourceTopic, "mine", acl.PatternLiteral),
		rule("User:alice", acl.OpDescribe, acl.ResourceGroup, "mine", acl.PatternLiteral),
		rule("User:alice", acl.OpDescribe, acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral))
	alice := b.rawAs(t, "alice")

	md := kmsg.NewPtrMetadataRequest()
	md.Version, md.IncludeClusterAuthorizedOperations, md.IncludeTopicAuthorizedOperations = 9, true, true
	mr := alice.roundTrip(md).(*kmsg.MetadataResponse)
	var names []string
	for _, tp := range mr.Topics {
		names = append(names, *tp.Topic)
	}
	if !slices.Equal(names, []string{"mine"}) {
		t.Fatalf("all-topics Metadata lists %v, want [mine]", names)
	}
	if want := int32(1<<acl.OpRead | 1<<acl.OpDescribe); mr.Topics[0].AuthorizedOperations != want {
		t.Errorf("topic authorized operations %b, want %b", mr.Topics[0].AuthorizedOperations, want)
	}
	if want := int32(1 << acl.OpDescribe); mr.AuthorizedOperations != want {
		t.Errorf("cluster authorized operations %b, want %b", mr.AuthorizedOperations, want)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if got := alice.roundTrip(dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; got != 1<<acl.OpDescribe {
		t.Errorf("DescribeCluster authorized operations %b", got)
	}
	// Without DESCRIBE on the cluster: 0.
	if got := b.rawAs(t, "bob").roundTrip(dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; got != 0 {
		t.Errorf("bob's DescribeCluster authorized operations %b, want 0", got)
	}
	// ListGroups: alice has DESCRIBE on the cluster, so sees all; bob
	// with DESCRIBE on group "theirs" only sees it.
	b.grant(t, rule("User:bob", acl.OpDescribe, acl.ResourceGroup, "theirs", acl.PatternLiteral))
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	list := func(rc *rawConn) []string {
		var out []string
		for _, g := range rc.roundTrip(lg).(*kmsg.ListGroupsResponse).Groups {
			out = append(out, g.Group)
		}
		slices.Sort(out)
		return out
	}
	if got := list(alice); !slices.Equal(got, []string{"mine", "theirs"}) {
		t.Errorf("alice lists %v", got)
	}
	if got := list(b.rawAs(t, "bob")); !slices.Equal(got, []string{"theirs"}) {
		t.Errorf("bob lists %v", got)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups, dg.IncludeAuthorizedOperations = 5, []string{"mine"}, true
	if got := alice.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0].AuthorizedOperations; got != 1<<acl.OpDescribe {
		t.Errorf("group authorized operations %b", got)
	}
}

// TestACLAdminKadm: franz-go's kadm creates, describes (literal, prefixed,
// MATCH) and deletes ACLs; duplicates are stored once.
func TestACLAdminKadm(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	adm := kadm.NewClient(b.admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := kadm.NewACLs().Topics("orders").Groups("app").Allow("User:alice").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	for range 2 {
		res, err := adm.CreateACLs(ctx, create)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("create %+v: %v", r, r.Err)
			}
		}
	}
	pre := kadm.NewACLs().Topics("ord").Deny("User:bob").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed)
	if _, err := adm.CreateACLs(ctx, pre); err != nil {
		t.Fatal(err)
	}
	if n := b.meta.Image().NumACLs(); n != 5 {
		t.Fatalf("%d ACLs stored, want 5 (4 + 1, the repeated creation adds none)", n)
	}
	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternMatch).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range described {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		for _, d := range r.Described {
			got = append(got, d.Name+"/"+d.Pattern.String()+"/"+d.Principal+"/"+d.Operation.String()+"/"+d.Permission.String())
		}
	}
	slices.Sort(got)
	want := []string{"ord/PREFIXED/User:bob/WRITE/DENY", "orders/LITERAL/User:alice/DESCRIBE/ALLOW", "orders/LITERAL/User:alice/READ/ALLOW"}
	if !slices.Equal(got, want) {
		t.Errorf("MATCH orders: %v, want %v", got, want)
	}
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().Groups("app").ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	if len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 2 {
		t.Fatalf("delete group ACLs: %+v", del)
	}
	if n := b.meta.Image().NumACLs(); n != 3 {
		t.Fatalf("%d ACLs left, want 3", n)
	}
	// The ACLs are in the metadata file: a restarted broker has them.
	dir := b.dir
	b.stop()
	b2 := startBrokerIn(t, dir, func(c *Config) { c.Authorizer = acl.New(acl.Config{}, nil) })
	if n := b2.meta.Image().NumACLs(); n != 3 {
		t.Fatalf("after a restart: %d ACLs, want 3", n)
	}
	if b2.srv.cfg.Authorizer.Set().Len() != 3 {
		t.Fatalf("after a restart the authorizer holds %d ACLs", b2.srv.cfg.Authorizer.Set().Len())
	}
}

// TestACLRequestsWithoutAuthorizer: without authorizer.class.name the ACL
// requests answer SECURITY_DISABLED, as Kafka's.
func TestACLRequestsWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm := kadm.NewClient(b.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Errorf("CreateAcls: %+v %v", res, err)
	}
	d, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts().ResourcePatternType(kadm.ACLPatternAny))
	if err == nil && (len(d) == 0 || !errors.Is(d[0].Err, kerr.SecurityDisabled)) {
		t.Errorf("DescribeAcls: %+v", d)
	}
	del, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts().ResourcePatternType(kadm.ACLPatternAny))
	if err == nil && (len(del) == 0 || !errors.Is(del[0].Err, kerr.SecurityDisabled)) {
		t.Errorf("DeleteAcls: %+v", del)
	}
}

// TestAuditLog: a denial is logged on kafka.authorizer.logger with the
// principal, host, operation and resource, once however many times it
// repeats within the rate limit; allowances only at debug level.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.DebugLevel)
	authz := acl.New(acl.Config{}, zap.New(core))
	b := startBroker(t, func(c *Config) { c.Authorizer = authz })
	cl := b.client(kgo.RecordRetries(1))
	for range 5 {
		md := request[*kmsg.MetadataResponse](t, cl, metadataReq(false)("secret"))
		if md.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("Metadata: %d", md.Topics[0].ErrorCode)
		}
	}
	denials := logs.FilterLoggerName(acl.AuditLoggerName).FilterMessage("authorization denied").All()
	if len(denials) != 1 {
		t.Fatalf("%d denial lines, want 1 (rate-limited): %v", len(denials), denials)
	}
	f := denials[0].ContextMap()
	for k, want := range map[string]string{"principal": "User:ANONYMOUS", "host": "127.0.0.1", "operation": "DESCRIBE",
		"resource_type": "TOPIC", "resource_name": "secret", "pattern_type": "LITERAL", "request": "Metadata"} {
		if f[k] != want {
			t.Errorf("audit field %s = %v, want %q (line %v)", k, f[k], want, f)
		}
	}
	if denials[0].Level != zap.InfoLevel {
		t.Errorf("denial at %v", denials[0].Level)
	}
	for _, e := range logs.FilterLoggerName(acl.AuditLoggerName).All() {
		if strings.Contains(e.Message, "authorized") && e.Level != zap.DebugLevel {
			t.Errorf("allowance logged at %v", e.Level)
		}
	}
}
