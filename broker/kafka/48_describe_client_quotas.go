package kafka

// DescribeClientQuotas (key 48), versions 0-1: the client quotas of the
// metadata that match the filter (DESCRIBE_CONFIGS on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED) (broker/quota.Describe: Kafka's matching
// and error messages). A bad filter answers INVALID_REQUEST (or
// UNSUPPORTED_VERSION for an unknown entity or match type) with no
// entries.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/quota"
)

func init() { register(kmsg.DescribeClientQuotas.Int16(), 0, 1, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !s.authorizeCluster(r, acl.OpDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	filter := make([]quota.Component, len(req.Components))
	for i, c := range req.Components {
		filter[i] = quota.Component{EntityType: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match}
	}
	entries, qerr := quota.Describe(s.meta.Image().ClientQuotas(), filter, req.Strict)
	if qerr != nil {
		resp.ErrorCode = quotaErrCode(qerr)
		resp.ErrorMessage = &qerr.Msg
		return resp, nil
	}
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, len(entries))
	for i, e := range entries {
		out := &resp.Entries[i]
		*out = kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = p.Type, p.Name
			out.Entity = append(out.Entity, ent)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			out.Values = append(out.Values, v)
		}
	}
	return resp, nil
}

// quotaErrCode is the Kafka error code of a quota error.
func quotaErrCode(e *quota.Error) int16 {
	if e.Code == "UNSUPPORTED_VERSION" {
		return kerr.UnsupportedVersion.Code
	}
	return kerr.InvalidRequest.Code
}
