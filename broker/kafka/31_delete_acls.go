package kafka

// DeleteAcls (key 31), versions 1-3 (v1 brought pattern types).
//
// Without an authorizer every filter result is SECURITY_DISABLED. ALTER
// on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED). A filter with
// an UNKNOWN field is INVALID_REQUEST; the others delete, in one metadata
// change, every ACL they match, and each result lists the ACLs its filter
// matched (an ACL matched by two filters is listed under both, as Kafka
// does).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.DeleteACLs.Int16(), 1, 3, handleDeleteACLs) }

func handleDeleteACLs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	fail := func(code int16, msg *string) {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
		}
	}
	store, ok := s.meta.(metadata.ACLStore)
	switch {
	case s.cfg.Authorizer == nil || !ok:
		fail(kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerMsg))
		return resp, nil
	case !s.authorizeCluster(r, acl.OpAlter):
		fail(kerr.ClusterAuthorizationFailed.Code, nil)
		return resp, nil
	}
	var filters []acl.Filter
	var idx []int
	for i, rf := range req.Filters {
		f := acl.Filter{
			ResourceType: acl.ResourceType(rf.ResourceType), ResourceName: rf.ResourceName,
			PatternType: acl.PatternType(rf.ResourcePatternType), Principal: rf.Principal, Host: rf.Host,
			Operation: acl.Operation(rf.Operation), Permission: acl.Permission(rf.PermissionType),
		}
		if err := f.Validate(); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		filters = append(filters, f)
		idx = append(idx, i)
	}
	if len(filters) == 0 {
		return resp, nil
	}
	matched, err := store.DeleteACLs(r.Ctx, filters)
	if err != nil {
		s.log.Warn("DeleteAcls failed", zap.Error(err), zap.String("principal", r.Principal))
		ke := metadataError(err)
		for _, i := range idx {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = ke.code, ke.msgPtr()
		}
		return resp, nil
	}
	for j, i := range idx {
		for _, b := range matched[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
			m.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
			m.Principal, m.Host = b.Principal, b.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	return resp, nil
}
