package kafka

import (
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/acl"
	"weir/broker/tlsconf/tlstest"
)

// aclBroker is a broker with ACLs on: a PLAINTEXT listener whose clients
// are User:ANONYMOUS (a super user: the administrator), and an SSL
// listener with mutual TLS whose clients are User:<common name>.
type aclBroker struct {
	*testBroker
	tls   *tlsSetup
	authz *acl.Authorizer
	admin *kgo.Client
}

func startACLBroker(t *testing.T, cfg acl.Config, opts ...brokerOpt) *aclBroker {
	t.Helper()
	ts := newTLSSetup(t)
	settings := ts.settings("ssl.client.auth", "required", "ssl.principal.mapping.rules", "RULE:^CN=([^,]+).*$/$1/,DEFAULT")
	cfg.SuperUsers = append(cfg.SuperUsers, "User:ANONYMOUS")
	authz := acl.New(cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	opts = append([]brokerOpt{withTLS(t, settings, nil), func(c *Config) { c.Authorizer = authz }}, opts...)
	b := &aclBroker{testBroker: startBroker(t, opts...), tls: ts, authz: authz}
	b.admin = b.clientAt(t, b.listenerAddr("PLAINTEXT"))
	return b
}

func (b *aclBroker) clientAt(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// as returns a client over mutual TLS whose principal is User:<cn>.
func (b *aclBroker) as(t *testing.T, cn string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cert := b.tls.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: cn}})
	return b.clientAt(t, b.listenerAddr("SSL"), append([]kgo.Opt{kgo.DialTLSConfig(b.tls.clientTLS(t, cert))}, opts...)...)
}

// grant creates ACLs as the administrator and waits until the broker's
// authorizer holds them.
func (b *aclBroker) grant(t *testing.T, bs ...acl.Binding) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, x := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceType(x.ResourceType), x.ResourceName
		c.ResourcePatternType = kmsg.ACLResourcePatternType(x.PatternType)
		c.Principal, c.Host = x.Principal, x.Host
		c.Operation, c.PermissionType = kmsg.ACLOperation(x.Operation), kmsg.ACLPermissionType(x.Permission)
		req.Creations = append(req.Creations, c)
	}
	resp := request[*kmsg.CreateACLsResponse](t, b.admin, req)
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls %v: error %d %v", bs[i], r.ErrorCode, r.ErrorMessage)
		}
	}
}

// rule is an ALLOW ACL (DENY with deny) for every host.
func rule(principal string, op acl.Operation, t acl.ResourceType, name string, pt acl.PatternType) acl.Binding {
	return acl.Binding{ResourceType: t, ResourceName: name, PatternType: pt, Principal: principal, Host: acl.Wildcard, Operation: op, Permission: acl.PermAllow}
}

func deny(b acl.Binding) acl.Binding {
	b.Permission = acl.PermDeny
	return b
}
