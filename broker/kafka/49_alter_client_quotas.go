package kafka

// AlterClientQuotas (key 49), versions 0-1: sets and removes client
// quotas (producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate) of users, client ids and their defaults, in
// the replicated metadata (ALTER_CONFIGS on the cluster, else every entry
// gets CLUSTER_AUTHORIZATION_FAILED; one client_quota record per changed value,
// proposed together). Each entry is validated as Kafka's controller does
// (broker/quota.EntityOf and CheckValue, Kafka's messages): an invalid
// entry gets INVALID_REQUEST and changes nothing, the others apply. A
// value equal to the current one, or the removal of an absent one, writes
// nothing. validate_only checks without applying.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/metadata"
	"weir/broker/quota"
)

func init() { register(kmsg.AlterClientQuotas.Int16(), 0, 1, handleAlterClientQuotas) }

func handleAlterClientQuotas(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	im := s.meta.Image()
	denied := !s.authorizeCluster(r, acl.OpAlterConfigs)
	var changes []metadata.ClientQuota
	var applied []int // entries whose changes are in changes
	seen := map[quota.Entity]bool{}
	for _, e := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		parts := make([]metadata.QuotaEntityPart, len(e.Entity))
		for j, p := range e.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = p.Type, p.Name
			out.Entity = append(out.Entity, ent)
			parts[j] = metadata.QuotaEntityPart{Type: p.Type, Name: p.Name}
		}
		if denied {
			out.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			resp.Entries = append(resp.Entries, out)
			continue
		}
		recs, qerr := alterEntity(im, parts, e.Ops, seen)
		if qerr != nil {
			out.ErrorCode = quotaErrCode(qerr)
			out.ErrorMessage = &qerr.Msg
		} else if len(recs) > 0 {
			changes = append(changes, recs...)
			applied = append(applied, len(resp.Entries))
		}
		resp.Entries = append(resp.Entries, out)
	}
	if req.ValidateOnly || len(changes) == 0 {
		return resp, nil
	}
	var err error
	if a, ok := s.meta.(metadata.ClientQuotaAlterer); ok {
		err = a.AlterClientQuotas(r.Ctx, changes)
	} else {
		err = fmt.Errorf("this metadata store cannot keep client quotas")
	}
	if ke := metadataError(err); ke != nil {
		for _, i := range applied {
			resp.Entries[i].ErrorCode = ke.code
			resp.Entries[i].ErrorMessage = ke.msgPtr()
		}
	}
	return resp, nil
}

// alterEntity validates one entry and returns the records of what it
// changes against im.
func alterEntity(im *metadata.Image, parts []metadata.QuotaEntityPart, ops []kmsg.AlterClientQuotasRequestEntryOp, seen map[quota.Entity]bool) ([]metadata.ClientQuota, *quota.Error) {
	ent, qerr := quota.EntityOf(parts)
	if qerr != nil {
		return nil, qerr
	}
	if seen[ent] {
		return nil, &quota.Error{Code: "INVALID_REQUEST", Msg: "Ignoring duplicate entity " + ent.String()}
	}
	seen[ent] = true
	keys := map[string]bool{}
	for _, op := range ops {
		if keys[op.Key] {
			return nil, &quota.Error{Code: "INVALID_REQUEST", Msg: fmt.Sprintf("Duplicate quota key %s not updating quota for this entity %s", op.Key, ent)}
		}
		keys[op.Key] = true
	}
	cur := im.ClientQuota(parts)
	var recs []metadata.ClientQuota
	for _, op := range ops {
		old, has := cur[op.Key]
		if op.Remove {
			if has {
				recs = append(recs, metadata.ClientQuota{Entity: ent.Parts(), Key: op.Key, Remove: true})
			}
			continue
		}
		if qerr := quota.CheckValue(op.Key, op.Value); qerr != nil {
			return nil, qerr
		}
		if !has || old != op.Value {
			recs = append(recs, metadata.ClientQuota{Entity: ent.Parts(), Key: op.Key, Value: op.Value})
		}
	}
	return recs, nil
}
