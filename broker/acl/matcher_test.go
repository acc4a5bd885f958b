package acl

import (
	"fmt"
	"testing"
)

func allow(t ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	return Binding{ResourceType: t, ResourceName: name, PatternType: pt, Principal: principal, Host: Wildcard, Operation: op, Permission: PermAllow}
}

func deny(t ResourceType, name string, pt PatternType, principal string, op Operation) Binding {
	b := allow(t, name, pt, principal, op)
	b.Permission = PermDeny
	return b
}

// TestDecide: the decisions of Kafka's StandardAuthorizer
// (StandardAuthorizerData.findAclRule / findResult), case by case.
func TestDecide(t *testing.T) {
	alice, bob := "User:alice", "User:bob"
	withHost := allow(ResourceTopic, "hosted", PatternLiteral, alice, OpRead)
	withHost.Host = "10.0.0.1"
	set := NewSet([]Binding{
		allow(ResourceTopic, "orders", PatternLiteral, alice, OpRead),
		allow(ResourceTopic, "logs-", PatternPrefixed, alice, OpWrite),
		deny(ResourceTopic, "logs-secret", PatternPrefixed, alice, OpWrite),
		allow(ResourceTopic, "public", PatternLiteral, WildcardPrincipal, OpAll),
		deny(ResourceTopic, "public", PatternLiteral, bob, OpRead),
		allow(ResourceTopic, Wildcard, PatternLiteral, "User:reader", OpDescribe),
		allow(ResourceTopic, "cfg", PatternLiteral, alice, OpAlterConfigs),
		deny(ResourceTopic, "denyread", PatternLiteral, alice, OpRead),
		allow(ResourceTopic, "denyread", PatternLiteral, alice, OpAll),
		allow(ResourceGroup, "g", PatternPrefixed, alice, OpRead),
		allow(ResourceCluster, ClusterName, PatternLiteral, alice, OpIdempotentWrite),
		withHost,
	})
	cases := []struct {
		p      string
		host   string
		op     Operation
		rt     ResourceType
		name   string
		noACL  bool // allow.everyone.if.no.acl.found
		want   bool
		noACLs bool
	}{
		{alice, "h", OpRead, ResourceTopic, "orders", false, true, false},
		{alice, "h", OpDescribe, ResourceTopic, "orders", false, true, false},           // READ implies DESCRIBE
		{alice, "h", OpWrite, ResourceTopic, "orders", false, false, false},             // other op: denied (ACLs exist)
		{alice, "h", OpWrite, ResourceTopic, "orders", true, false, false},              // ... even with allow.everyone
		{bob, "h", OpRead, ResourceTopic, "orders", true, false, false},                 // another principal's ACL names it
		{alice, "h", OpWrite, ResourceTopic, "logs-app", false, true, false},            // prefixed
		{alice, "h", OpWrite, ResourceTopic, "logs-", false, true, false},               // prefix equal to the name
		{alice, "h", OpWrite, ResourceTopic, "logs", false, false, false},               // shorter than the prefix (the "*" ACL names it)
		{alice, "h", OpWrite, ResourceTopic, "logs-secret-1", false, false, false},      // longer deny prefix wins
		{alice, "h", OpDescribe, ResourceTopic, "logs-app", false, true, false},         // WRITE implies DESCRIBE
		{bob, "h", OpWrite, ResourceTopic, "public", false, true, false},                // User:* and ALL
		{bob, "h", OpRead, ResourceTopic, "public", false, false, false},                // deny wins over allow
		{bob, "h", OpDescribe, ResourceTopic, "public", false, true, false},             // a DENY READ does not deny DESCRIBE
		{"User:reader", "h", OpDescribe, ResourceTopic, "anything", false, true, false}, // wildcard resource
		{"User:reader", "h", OpRead, ResourceTopic, "anything", true, false, false},     // wildcard ACL names every topic
		{alice, "h", OpDescribeConfigs, ResourceTopic, "cfg", false, true, false},       // ALTER_CONFIGS implies DESCRIBE_CONFIGS
		{alice, "h", OpDescribe, ResourceTopic, "cfg", false, false, false},             // ... but not DESCRIBE
		{alice, "h", OpRead, ResourceTopic, "denyread", false, false, false},
		{alice, "h", OpWrite, ResourceTopic, "denyread", false, true, false},
		{alice, "h", OpRead, ResourceGroup, "nothing", false, false, true},
		{alice, "h", OpRead, ResourceGroup, "nothing", true, true, true},
		{alice, "h", OpRead, ResourceGroup, "g1", false, true, false},
		{alice, "h", OpDescribe, ResourceGroup, "g1", false, true, false},
		{alice, "h", OpDelete, ResourceGroup, "g1", false, false, false},
		{alice, "h", OpIdempotentWrite, ResourceCluster, ClusterName, false, true, false},
		{alice, "h", OpAlter, ResourceCluster, ClusterName, false, false, false},
		{alice, "10.0.0.1", OpRead, ResourceTopic, "hosted", false, true, false},
		{alice, "10.0.0.2", OpRead, ResourceTopic, "hosted", false, false, false},
		{alice, "h", OpRead, ResourceTransactionalID, "orders", false, false, true}, // types do not mix
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s/%s/%s/%v", c.p, c.host, c.op, c.rt, c.name, c.noACL), func(t *testing.T) {
			d := set.Decide(Action{Principal: c.p, Host: c.host, Operation: c.op, Type: c.rt, Name: c.name}, c.noACL)
			if d.Allowed != c.want || d.NoACLs != c.noACLs {
				t.Errorf("Decide = %+v, want allowed %v, no ACLs %v", d, c.want, c.noACLs)
			}
		})
	}
}

// TestDecideManyACLs: a decision among 10,000 ACLs finds the one that
// applies, literal and prefixed.
func TestDecideManyACLs(t *testing.T) {
	var bs []Binding
	for i := range 5000 {
		bs = append(bs, allow(ResourceTopic, fmt.Sprintf("topic-%d", i), PatternLiteral, fmt.Sprintf("User:u%d", i), OpWrite))
		bs = append(bs, allow(ResourceTopic, fmt.Sprintf("pre-%d-", i), PatternPrefixed, fmt.Sprintf("User:u%d", i), OpRead))
	}
	s := NewSet(bs)
	if s.Len() != 10000 {
		t.Fatalf("Len %d", s.Len())
	}
	for _, i := range []int{0, 17, 4999} {
		u := fmt.Sprintf("User:u%d", i)
		if !s.Decide(Action{Principal: u, Host: "h", Operation: OpWrite, Type: ResourceTopic, Name: fmt.Sprintf("topic-%d", i)}, false).Allowed {
			t.Errorf("%s cannot write its topic", u)
		}
		if !s.Decide(Action{Principal: u, Host: "h", Operation: OpRead, Type: ResourceTopic, Name: fmt.Sprintf("pre-%d-x", i)}, false).Allowed {
			t.Errorf("%s cannot read under its prefix", u)
		}
		if s.Decide(Action{Principal: u, Host: "h", Operation: OpWrite, Type: ResourceTopic, Name: fmt.Sprintf("topic-%d", i^1)}, true).Allowed {
			t.Errorf("%s writes another's topic", u)
		}
	}
}

// TestAnyAllowed: Kafka's authorizeByResourceType pattern rules.
func TestAnyAllowed(t *testing.T) {
	a := "User:alice"
	cases := []struct {
		name string
		acls []Binding
		want bool
	}{
		{"none", nil, false},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, a, OpWrite)}, true},
		{"ALL counts", []Binding{allow(ResourceTopic, "t", PatternLiteral, a, OpAll)}, true},
		{"other op", []Binding{allow(ResourceTopic, "t", PatternLiteral, a, OpRead)}, false},
		{"literal denied", []Binding{allow(ResourceTopic, "t", PatternLiteral, a, OpWrite), deny(ResourceTopic, "t", PatternLiteral, a, OpWrite)}, false},
		{"prefix denied", []Binding{allow(ResourceTopic, "tx", PatternPrefixed, a, OpWrite), deny(ResourceTopic, "t", PatternPrefixed, a, OpWrite)}, false},
		{"longer deny prefix leaves room", []Binding{allow(ResourceTopic, "t", PatternPrefixed, a, OpWrite), deny(ResourceTopic, "tx", PatternPrefixed, a, OpWrite)}, true},
		{"wildcard deny", []Binding{allow(ResourceTopic, "t", PatternLiteral, a, OpWrite), deny(ResourceTopic, Wildcard, PatternLiteral, a, OpWrite)}, false},
		{"wildcard allow", []Binding{allow(ResourceTopic, Wildcard, PatternLiteral, WildcardPrincipal, OpWrite)}, true},
		{"other type", []Binding{allow(ResourceGroup, "t", PatternLiteral, a, OpWrite)}, false},
	}
	for _, c := range cases {
		if got := NewSet(c.acls).AnyAllowed(a, "h", OpWrite, ResourceTopic); got != c.want {
			t.Errorf("%s: AnyAllowed = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFilterMatches: Kafka's ResourcePatternFilter / AccessControlEntryFilter.
func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := allow(ResourceTopic, "foo", PatternLiteral, "User:a", OpRead)
	pre := allow(ResourceTopic, "fo", PatternPrefixed, "User:a", OpRead)
	wild := allow(ResourceTopic, Wildcard, PatternLiteral, "User:a", OpRead)
	other := allow(ResourceTopic, "bar", PatternLiteral, "User:b", OpWrite)
	all := []Binding{lit, pre, wild, other}
	cases := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"any", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, all},
		{"match foo", Filter{ResourceType: ResourceTopic, ResourceName: str("foo"), PatternType: PatternMatch, Operation: OpAny, Permission: PermAny}, []Binding{lit, pre, wild}},
		{"any foo", Filter{ResourceType: ResourceTopic, ResourceName: str("foo"), PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, []Binding{lit}},
		{"prefixed", Filter{ResourceType: ResourceTopic, PatternType: PatternPrefixed, Operation: OpAny, Permission: PermAny}, []Binding{pre}},
		{"literal fo", Filter{ResourceType: ResourceTopic, ResourceName: str("fo"), PatternType: PatternLiteral, Operation: OpAny, Permission: PermAny}, nil},
		{"principal b", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: str("User:b"), Operation: OpAny, Permission: PermAny}, []Binding{other}},
		{"write", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpWrite, Permission: PermAllow}, []Binding{other}},
		{"deny", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermDeny}, nil},
		{"group", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermAny}, nil},
	}
	for _, c := range cases {
		var got []Binding
		for _, b := range all {
			if c.f.Matches(b) {
				got = append(got, b)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: matched %v, want %v", c.name, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := allow(ResourceTopic, "t", PatternLiteral, "User:a", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, mut := range []func(*Binding){
		func(b *Binding) { b.ResourceType = ResourceAny },
		func(b *Binding) { b.PatternType = PatternMatch },
		func(b *Binding) { b.Operation = OpAny },
		func(b *Binding) { b.Permission = PermAny },
		func(b *Binding) { b.ResourceName = "" },
		func(b *Binding) { b.Principal = "alice" },
	} {
		b := good
		mut(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%v: no error", b)
		}
	}
}

func TestParseConfig(t *testing.T) {
	if c, err := ParseConfig(map[string]string{}); c != nil || err != nil {
		t.Fatalf("no class: %v %v", c, err)
	}
	if _, err := ParseConfig(map[string]string{ConfigClassName: "com.example.MyAuthorizer"}); err == nil {
		t.Fatal("unknown class accepted")
	}
	c, err := ParseConfig(map[string]string{ConfigClassName: StandardAuthorizer, ConfigSuperUsers: "User:admin; User:CN=broker,O=x", ConfigAllowIfNoACLs: "true"})
	if err != nil || !c.AllowIfNoACLs || fmt.Sprint(c.SuperUsers) != "[User:admin User:CN=broker,O=x]" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := ParseConfig(map[string]string{ConfigClassName: LegacyAuthorizer, ConfigSuperUsers: "admin"}); err == nil {
		t.Fatal("super user without a type accepted")
	}
}
