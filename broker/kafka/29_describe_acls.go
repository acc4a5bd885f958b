package kafka

// DescribeAcls (key 29), versions 1-3 (v1 brought pattern types; Kafka 4 removed v0).
//
// Without an authorizer: SECURITY_DISABLED. Otherwise DESCRIBE on the
// cluster is needed (CLUSTER_AUTHORIZATION_FAILED), a filter with an
// UNKNOWN field is INVALID_REQUEST, and the ACLs matching the filter
// (acl.Filter.Matches: ANY and MATCH as Kafka's) come back grouped by
// resource pattern, sorted.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.DescribeACLs.Int16(), 1, 3, handleDescribeACLs) }

const noAuthorizerMsg = "No Authorizer is configured."

func handleDescribeACLs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if s.cfg.Authorizer == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerMsg)
		return resp, nil
	}
	if !s.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f := acl.Filter{
		ResourceType: acl.ResourceType(req.ResourceType), ResourceName: req.ResourceName,
		PatternType: acl.PatternType(req.ResourcePatternType), Principal: req.Principal, Host: req.Host,
		Operation: acl.Operation(req.Operation), Permission: acl.Permission(req.PermissionType),
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return resp, nil
	}
	var cur *kmsg.DescribeACLsResponseResource
	for _, a := range s.meta.Image().ACLs() {
		b := a.Binding
		if !f.Matches(b) {
			continue
		}
		if cur == nil || acl.ResourceType(cur.ResourceType) != b.ResourceType || cur.ResourceName != b.ResourceName || acl.PatternType(cur.ResourcePatternType) != b.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			resp.Resources = append(resp.Resources, res)
			cur = &resp.Resources[len(resp.Resources)-1]
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = b.Principal, b.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		cur.ACLs = append(cur.ACLs, e)
	}
	return resp, nil
}
