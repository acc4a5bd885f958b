package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

// aclFuzzSeeds are CreateAcls, DescribeAcls and DeleteAcls frames at each
// version, with valid and invalid fields, and a Metadata request for the
// authorizer's decisions.
func aclFuzzSeeds() [][]byte {
	var out [][]byte
	add := func(req kmsg.Request) {
		fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed")).AppendRequest(nil, req, 7)
		out = append(out, fr[4:])
	}
	for _, v := range []int16{1, 2, 3} {
		c := kmsg.NewPtrCreateACLsRequest()
		c.Version = v
		for _, pt := range []kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLResourcePatternTypeMatch} {
			e := kmsg.NewCreateACLsRequestCreation()
			e.ResourceType, e.ResourceName, e.ResourcePatternType = kmsg.ACLResourceTypeTopic, "fu", pt
			e.Principal, e.Host, e.Operation, e.PermissionType = "User:fuzz", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeDeny
			c.Creations = append(c.Creations, e)
		}
		add(c)
		d := kmsg.NewPtrDescribeACLsRequest()
		d.Version = v
		d.ResourceType, d.ResourceName, d.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr("fuzz"), kmsg.ACLResourcePatternTypeMatch
		d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		add(d)
		x := kmsg.NewPtrDeleteACLsRequest()
		x.Version = v
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		x.Filters = append(x.Filters, f)
		add(x)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version, md.IncludeTopicAuthorizedOperations = 9, true
	add(md)
	return out
}

// FuzzACLRequests feeds arbitrary frames to a broker with ACLs on
// (allow.everyone.if.no.acl.found, so fuzzed ACLs decide): dispatch must
// not panic and answer well-formed frames, and every ACL it stored is
// valid. The seed corpus is in testdata/fuzz/FuzzACLRequests.
func FuzzACLRequests(f *testing.F) {
	for _, s := range aclFuzzSeeds() {
		f.Add(s)
	}
	b := startBroker(f, func(c *Config) { c.Authorizer = acl.New(acl.Config{AllowIfNoACLs: true}, nil) })
	createTopic(f, b, "fuzz", 1, nil)
	f.Fuzz(func(t *testing.T, frame []byte) {
		dispatchFrame(t, b.srv, frame)
		for _, a := range b.meta.Image().ACLs() {
			if err := a.Validate(); err != nil {
				t.Fatalf("stored ACL %v: %v", a.Binding, err)
			}
		}
	})
}

// TestWriteACLFuzzSeedCorpus is TestWriteFuzzSeedCorpus for FuzzACLRequests.
func TestWriteACLFuzzSeedCorpus(t *testing.T) { seedCorpus(t, "FuzzACLRequests", aclFuzzSeeds()) }
