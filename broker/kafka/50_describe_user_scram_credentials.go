package kafka

// DescribeUserScramCredentials (key 50), version 0: the mechanisms and
// iteration counts of users' SCRAM credentials (never the salt or keys).
// No users (null or empty) means every user with a credential; a user
// named twice is DUPLICATE_RESOURCE, a user without credentials
// RESOURCE_NOT_FOUND, as Kafka's broker answers. It needs DESCRIBE on the
// cluster (else CLUSTER_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/sasl"
)

func init() {
	register(kmsg.DescribeUserSCRAMCredentials.Int16(), 0, 0, handleDescribeUserSCRAMCredentials)
}

func handleDescribeUserSCRAMCredentials(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	img := s.cfg.Metadata.Image()
	if !s.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var names []string
	if len(req.Users) == 0 {
		names = img.ScramUsers()
	} else {
		for _, u := range req.Users {
			names = append(names, u.Name)
		}
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	done := map[string]bool{}
	for _, n := range names {
		if done[n] {
			continue
		}
		done[n] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = n
		creds := img.ScramCredentials(n)
		switch {
		case count[n] > 1:
			ke := kafkaErr(kerr.DuplicateResource, "Cannot describe SCRAM credentials for the same user twice in a single request: %s", n)
			res.ErrorCode, res.ErrorMessage = ke.code, ke.msgPtr()
		case len(creds) == 0:
			ke := kafkaErr(kerr.ResourceNotFound, "Attempt to describe nonexistent user: %s", n)
			res.ErrorCode, res.ErrorMessage = ke.code, ke.msgPtr()
		}
		if res.ErrorCode == 0 {
			for _, c := range creds {
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = sasl.ScramMechanismCode(c.Mechanism), c.Iterations
				res.CredentialInfos = append(res.CredentialInfos, ci)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
