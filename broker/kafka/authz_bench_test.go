package kafka

import (
	"context"
	"fmt"
	"testing"

	"weir/broker/acl"
)

// manyACLs returns n ACLs of many principals: literal and prefixed topic
// ACLs (prefixes of 3 to 12 characters), group ACLs, and among them the
// prefixed one letting User:ANONYMOUS write to "aclbench".
func manyACLs(n int) []acl.Binding {
	out := []acl.Binding{rule("User:ANONYMOUS", acl.OpWrite, acl.ResourceTopic, "aclb", acl.PatternPrefixed)}
	for i := 1; len(out) < n; i++ {
		p := fmt.Sprintf("User:app%d", i%500)
		switch i % 10 {
		case 0, 1, 2, 3, 4:
			out = append(out, rule(p, acl.OpWrite, acl.ResourceTopic, fmt.Sprintf("topic-%d", i), acl.PatternLiteral))
		case 5, 6, 7, 8:
			out = append(out, rule(p, acl.OpRead, acl.ResourceTopic, fmt.Sprintf("team%d-%s", i, "abcdefghij"[:i%10]), acl.PatternPrefixed))
		default:
			out = append(out, rule(p, acl.OpRead, acl.ResourceGroup, fmt.Sprintf("group-%d", i), acl.PatternLiteral))
		}
	}
	return out
}

// BenchmarkACLProduce: the produce rate of a broker without an authorizer
// and of one enforcing 10,000 ACLs (the producer allowed by a prefixed
// one), 100-byte records, acks=1, 8 partitions, a fresh broker per run.
//
//	for i in 1 2 3 4 5; do go test ./broker/kafka -run '^$' -bench 'BenchmarkACLProduce' -benchtime 1000000x -count 1; done
func BenchmarkACLProduce(b *testing.B) {
	for _, n := range []int{0, 10000} {
		name := "no-authorizer"
		if n > 0 {
			name = fmt.Sprintf("acls-%d", n)
		}
		b.Run(name, func(b *testing.B) {
			var opts []brokerOpt
			if n > 0 {
				opts = append(opts, func(c *Config) { c.Authorizer = acl.New(acl.Config{}, nil) })
			}
			br := startBroker(b, opts...)
			if n > 0 {
				if err := br.meta.CreateACLs(context.Background(), manyACLs(n)); err != nil {
					b.Fatal(err)
				}
				if got := br.srv.cfg.Authorizer.Set().Len(); got != n {
					b.Fatalf("authorizer holds %d ACLs", got)
				}
			}
			createTopic(b, br, "aclbench", 8, nil)
			produce100B(b, br, "aclbench")
		})
	}
}

// BenchmarkACLDecide: one decision among 10,000 ACLs (the matcher alone).
func BenchmarkACLDecide(b *testing.B) {
	s := acl.NewSet(manyACLs(10000))
	a := acl.Action{Principal: "User:ANONYMOUS", Host: "127.0.0.1", Operation: acl.OpWrite, Type: acl.ResourceTopic, Name: "aclbench"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !s.Decide(a, false).Allowed {
			b.Fatal("denied")
		}
	}
}
