package kafka

// CreateAcls (key 30), versions 1-3 (v1 brought pattern types).
//
// Without an authorizer every creation gets SECURITY_DISABLED. ALTER on
// the cluster is needed (else CLUSTER_AUTHORIZATION_FAILED for each).
// Each binding is validated as Kafka's controller does (acl.Binding.Validate:
// INVALID_REQUEST with the reason); the valid ones are stored together in
// one metadata change (an identical ACL is not stored twice). A failed
// change answers each of them with the error it maps to.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.CreateACLs.Int16(), 1, 3, handleCreateACLs) }

func handleCreateACLs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	fail := func(code int16, msg string) {
		for i := range resp.Results {
			resp.Results[i] = kmsg.NewCreateACLsResponseResult()
			resp.Results[i].ErrorCode = code
			if msg != "" {
				resp.Results[i].ErrorMessage = kmsg.StringPtr(msg)
			}
		}
	}
	store, ok := s.meta.(metadata.ACLStore)
	switch {
	case s.cfg.Authorizer == nil || !ok:
		fail(kerr.SecurityDisabled.Code, noAuthorizerMsg)
		return resp, nil
	case !s.authorizeCluster(r, acl.OpAlter):
		fail(kerr.ClusterAuthorizationFailed.Code, "")
		return resp, nil
	}
	var valid []acl.Binding
	var idx []int
	for i, c := range req.Creations {
		res := &resp.Results[i]
		*res = kmsg.NewCreateACLsResponseResult()
		b := acl.Binding{
			ResourceType: acl.ResourceType(c.ResourceType), ResourceName: c.ResourceName,
			PatternType: acl.PatternType(c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
			Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType),
		}
		if err := b.Validate(); err != nil {
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
			continue
		}
		valid = append(valid, b)
		idx = append(idx, i)
	}
	if len(valid) == 0 {
		return resp, nil
	}
	if err := store.CreateACLs(r.Ctx, valid); err != nil {
		s.log.Warn("CreateAcls failed", zap.Error(err), zap.String("principal", r.Principal))
		ke := metadataError(err)
		for _, i := range idx {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = ke.code, ke.msgPtr()
		}
	}
	return resp, nil
}
