package kafka

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/tlsconf/tlstest"
)

// rawAs opens a raw protocol connection over mutual TLS as User:<cn>.
func (b *aclBroker) rawAs(t *testing.T, cn string) *rawConn {
	t.Helper()
	cert := b.tls.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: cn}})
	c, err := tls.Dial("tcp", b.listenerAddr("SSL"), b.tls.clientTLS(t, cert))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// authzCase is one row of the authorization matrix: a request about
// resource res, the ACLs that allow principal p to make it, the error
// code the answer carries with them (ok) and without (denied: Kafka's).
type authzCase struct {
	name   string
	setup  func(t *testing.T, b *aclBroker, res string) // as the administrator
	grant  func(p, res string) []acl.Binding
	req    func(res string) kmsg.Request
	code   func(kmsg.Response) int16
	ok     int16
	denied int16
}

func topicACL(op acl.Operation) func(p, res string) []acl.Binding {
	return func(p, res string) []acl.Binding {
		return []acl.Binding{rule(p, op, acl.ResourceTopic, res, acl.PatternLiteral)}
	}
}

func groupACL(op acl.Operation) func(p, res string) []acl.Binding {
	return func(p, res string) []acl.Binding {
		return []acl.Binding{rule(p, op, acl.ResourceGroup, res, acl.PatternLiteral)}
	}
}

func clusterACL(op acl.Operation) func(p, res string) []acl.Binding {
	return func(p, _ string) []acl.Binding {
		return []acl.Binding{rule(p, op, acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral)}
	}
}

func both(a, b func(p, res string) []acl.Binding) func(p, res string) []acl.Binding {
	return func(p, res string) []acl.Binding { return append(a(p, res), b(p, res)...) }
}

func withTopic(t *testing.T, b *aclBroker, res string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = res, 1, 1
	req.Topics = append(req.Topics, rt)
	if resp := request[*kmsg.CreateTopicsResponse](t, b.admin, req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: %d", res, resp.Topics[0].ErrorCode)
	}
}

// withCommit creates topic res and commits an offset of it for group res.
func withCommit(t *testing.T, b *aclBroker, res string) {
	t.Helper()
	withTopic(t, b, res)
	req := offsetCommitReq(res)
	resp := request[*kmsg.OffsetCommitResponse](t, b.admin, req)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("commit for %s: %d", res, c)
	}
}

func offsetCommitReq(res string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.Generation, req.MemberID = res, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = res
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func topicCode[R any](get func(*R) int16) func(kmsg.Response) int16 {
	return func(r kmsg.Response) int16 { return get(any(r).(*R)) }
}

func authzCases() []authzCase {
	return append([]authzCase{
		{name: "Produce", setup: withTopic, grant: topicACL(acl.OpWrite),
			req:  func(res string) kmsg.Request { return produceReq(9, res, buildBatch([][]byte{[]byte("v")}, 0, 1)) },
			code: produceCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Produce/unknown topic", grant: topicACL(acl.OpWrite),
			req:  func(res string) kmsg.Request { return produceReq(9, res, buildBatch([][]byte{[]byte("v")}, 0, 1)) },
			code: produceCode,
			ok:   kerr.UnknownTopicOrPartition.Code, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Fetch", setup: withTopic, grant: topicACL(acl.OpRead),
			req:  func(res string) kmsg.Request { return fetchReq(12, res, 0, 0) },
			code: fetchCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Fetch/as follower", setup: withTopic, grant: clusterACL(acl.OpClusterAction),
			req: func(res string) kmsg.Request {
				req := fetchReq(12, res, 0, 0)
				req.ReplicaID = 7 // a follower
				return req
			},
			code: fetchCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "ListOffsets", setup: withTopic, grant: topicACL(acl.OpDescribe),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrListOffsetsRequest()
				req.Version, req.ReplicaID = 7, -1
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = res
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp = -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.ListOffsetsResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }),
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Metadata", setup: withTopic, grant: topicACL(acl.OpDescribe),
			req:  metadataReq(false),
			code: metadataCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Metadata/READ implies DESCRIBE", setup: withTopic, grant: topicACL(acl.OpRead),
			req:  metadataReq(false),
			code: metadataCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Metadata/auto-create", grant: both(topicACL(acl.OpDescribe), topicACL(acl.OpCreate)),
			req:  metadataReq(true),
			code: metadataCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "Metadata/auto-create without CREATE", grant: topicACL(acl.OpDescribe),
			req:  metadataReq(true),
			code: metadataCode,
			ok:   kerr.TopicAuthorizationFailed.Code, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "OffsetCommit", setup: withTopic, grant: both(groupACL(acl.OpRead), topicACL(acl.OpRead)),
			req:  func(res string) kmsg.Request { return offsetCommitReq(res) },
			code: offsetCommitCode,
			ok:   0, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "OffsetCommit/group only", setup: withTopic, grant: groupACL(acl.OpRead),
			req:  func(res string) kmsg.Request { return offsetCommitReq(res) },
			code: offsetCommitCode,
			ok:   kerr.TopicAuthorizationFailed.Code, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "OffsetFetch", setup: withCommit, grant: both(groupACL(acl.OpDescribe), topicACL(acl.OpDescribe)),
			req:  offsetFetchReq,
			code: errorCode,
			ok:   0, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "OffsetFetch/group only", setup: withCommit, grant: groupACL(acl.OpDescribe),
			req: offsetFetchReq,
			code: topicCode(func(r *kmsg.OffsetFetchResponse) int16 {
				if r.ErrorCode != 0 {
					return r.ErrorCode
				}
				return r.Topics[0].Partitions[0].ErrorCode
			}),
			ok: kerr.TopicAuthorizationFailed.Code, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "FindCoordinator/group", grant: groupACL(acl.OpDescribe),
			req:  findCoordinatorReq(0),
			code: errorCode,
			ok:   0, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "FindCoordinator/transaction",
			grant: func(p, res string) []acl.Binding {
				return []acl.Binding{rule(p, acl.OpDescribe, acl.ResourceTransactionalID, res, acl.PatternLiteral)}
			},
			req:  findCoordinatorReq(1),
			code: errorCode,
			ok:   0, denied: kerr.TransactionalIDAuthorizationFailed.Code},
		{name: "JoinGroup", grant: groupACL(acl.OpRead),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version, req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 7, res, 10000, 10000, "consumer"
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name = "range"
				req.Protocols = append(req.Protocols, p)
				return req
			},
			code: errorCode,
			// v4+: the first join is asked to come back with its member id.
			ok: kerr.MemberIDRequired.Code, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "Heartbeat", grant: groupACL(acl.OpRead),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrHeartbeatRequest()
				req.Version, req.Group, req.MemberID, req.Generation = 4, res, "m", 1
				return req
			},
			code: errorCode,
			ok:   kerr.UnknownMemberID.Code, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "SyncGroup", grant: groupACL(acl.OpRead),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrSyncGroupRequest()
				req.Version, req.Group, req.MemberID, req.Generation = 5, res, "m", 1
				req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
				return req
			},
			code: errorCode,
			ok:   kerr.UnknownMemberID.Code, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "LeaveGroup", grant: groupACL(acl.OpRead),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Version, req.Group = 4, res
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = "m"
				req.Members = append(req.Members, m)
				return req
			},
			code: topicCode(func(r *kmsg.LeaveGroupResponse) int16 {
				if r.ErrorCode != 0 {
					return r.ErrorCode
				}
				return r.Members[0].ErrorCode
			}),
			ok: kerr.UnknownMemberID.Code, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "DescribeGroups", grant: groupACL(acl.OpDescribe),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDescribeGroupsRequest()
				req.Version, req.Groups = 5, []string{res}
				return req
			},
			code: topicCode(func(r *kmsg.DescribeGroupsResponse) int16 { return r.Groups[0].ErrorCode }),
			ok:   0, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "DeleteGroups", setup: withCommit, grant: groupACL(acl.OpDelete),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDeleteGroupsRequest()
				req.Version, req.Groups = 2, []string{res}
				return req
			},
			code: topicCode(func(r *kmsg.DeleteGroupsResponse) int16 { return r.Groups[0].ErrorCode }),
			ok:   0, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "OffsetDelete", setup: withCommit, grant: both(groupACL(acl.OpDelete), topicACL(acl.OpRead)),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrOffsetDeleteRequest()
				req.Group = res
				rt := kmsg.NewOffsetDeleteRequestTopic()
				rt.Topic = res
				rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.OffsetDeleteResponse) int16 {
				if r.ErrorCode != 0 {
					return r.ErrorCode
				}
				return r.Topics[0].Partitions[0].ErrorCode
			}),
			ok: 0, denied: kerr.GroupAuthorizationFailed.Code},
		{name: "CreateTopics", grant: topicACL(acl.OpCreate),
			req:  createTopicsReq,
			code: createTopicsCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "CreateTopics/CREATE on the cluster", grant: clusterACL(acl.OpCreate),
			req:  createTopicsReq,
			code: createTopicsCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "DeleteTopics", setup: withTopic, grant: topicACL(acl.OpDelete),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.Version = 6
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.Topic = kmsg.StringPtr(res)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.DeleteTopicsResponse) int16 { return r.Topics[0].ErrorCode }),
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "DeleteRecords", setup: withTopic, grant: topicACL(acl.OpDelete),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDeleteRecordsRequest()
				req.Version, req.TimeoutMillis = 2, 5000
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = res
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Offset = 0
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.DeleteRecordsResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }),
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "InitProducerId/idempotent", grant: clusterACL(acl.OpIdempotentWrite),
			req:  initPIDReq(false),
			code: errorCode,
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "InitProducerId/WRITE on a topic", grant: topicACL(acl.OpWrite),
			req:  initPIDReq(false),
			code: errorCode,
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "InitProducerId/transactional",
			grant: func(p, res string) []acl.Binding {
				return []acl.Binding{rule(p, acl.OpWrite, acl.ResourceTransactionalID, res, acl.PatternLiteral)}
			},
			req:  initPIDReq(true),
			code: errorCode,
			ok:   0, denied: kerr.TransactionalIDAuthorizationFailed.Code},
		{name: "OffsetForLeaderEpoch", setup: withTopic, grant: topicACL(acl.OpDescribe),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				req.Version, req.ReplicaID = 4, -1
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = res
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.OffsetForLeaderEpochResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }),
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "DescribeConfigs/topic", setup: withTopic, grant: topicACL(acl.OpDescribeConfigs),
			req:  describeConfigsReq(resourceTopic),
			code: describeConfigsCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "DescribeConfigs/topic, ALTER_CONFIGS implies it", setup: withTopic, grant: topicACL(acl.OpAlterConfigs),
			req:  describeConfigsReq(resourceTopic),
			code: describeConfigsCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "DescribeConfigs/broker", grant: clusterACL(acl.OpDescribeConfigs),
			req:  describeConfigsReq(resourceBroker),
			code: describeConfigsCode,
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "AlterConfigs/topic", setup: withTopic, grant: topicACL(acl.OpAlterConfigs),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrAlterConfigsRequest()
				req.Version = 2
				rr := kmsg.NewAlterConfigsRequestResource()
				rr.ResourceType, rr.ResourceName = resourceTopic, res
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = "retention.ms", kmsg.StringPtr("60000")
				rr.Configs = append(rr.Configs, c)
				req.Resources = append(req.Resources, rr)
				return req
			},
			code: topicCode(func(r *kmsg.AlterConfigsResponse) int16 { return r.Resources[0].ErrorCode }),
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "IncrementalAlterConfigs/topic", setup: withTopic, grant: topicACL(acl.OpAlterConfigs),
			req:  incrementalAlterReq(resourceTopic),
			code: incrementalAlterCode,
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "IncrementalAlterConfigs/broker", grant: clusterACL(acl.OpAlterConfigs),
			req:  incrementalAlterReq(resourceBroker),
			code: incrementalAlterCode,
			// Allowed: sets the dynamic log.retention.ms of broker 0.
			ok: 0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "CreatePartitions", setup: withTopic, grant: topicACL(acl.OpAlter),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.Version, req.TimeoutMillis = 3, 5000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = res, 2
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.CreatePartitionsResponse) int16 { return r.Topics[0].ErrorCode }),
			ok:   0, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "ElectLeaders", setup: withTopic, grant: clusterACL(acl.OpAlter),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrElectLeadersRequest()
				req.Version = 2
				rt := kmsg.NewElectLeadersRequestTopic()
				rt.Topic, rt.Partitions = res, []int32{0}
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.ElectLeadersResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }),
			// One broker: its only replica already leads.
			ok: kerr.ElectionNotNeeded.Code, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "AlterPartitionReassignments", setup: withTopic, grant: clusterACL(acl.OpAlter),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				rt.Topic = res
				rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{0}}}
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.AlterPartitionAssignmentsResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode }),
			// One broker: the partition is on it already.
			ok: 0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "DescribeQuorum", grant: clusterACL(acl.OpDescribe),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDescribeQuorumRequest()
				req.Version = 2
				rt := kmsg.NewDescribeQuorumRequestTopic()
				rt.Topic = "__cluster_metadata"
				rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
				req.Topics = append(req.Topics, rt)
				return req
			},
			code: topicCode(func(r *kmsg.DescribeQuorumResponse) int16 {
				if r.ErrorCode != 0 || len(r.Topics) == 0 {
					return r.ErrorCode
				}
				return r.Topics[0].Partitions[0].ErrorCode
			}),
			ok: 0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "AlterClientQuotas", grant: clusterACL(acl.OpAlterConfigs),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrAlterClientQuotasRequest()
				req.Version = 1
				e := kmsg.NewAlterClientQuotasRequestEntry()
				ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
				ent.Type, ent.Name = "client-id", kmsg.StringPtr(res)
				e.Entity = append(e.Entity, ent)
				op := kmsg.NewAlterClientQuotasRequestEntryOp()
				op.Key, op.Value = "producer_byte_rate", 1<<20
				e.Ops = append(e.Ops, op)
				req.Entries = append(req.Entries, e)
				return req
			},
			code: topicCode(func(r *kmsg.AlterClientQuotasResponse) int16 { return r.Entries[0].ErrorCode }),
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "AlterUserScramCredentials", grant: clusterACL(acl.OpAlter),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
				u.Name, u.Mechanism, u.Iterations = res, 2, 4096
				u.Salt, u.SaltedPassword = []byte("0123456789abcdef"), make([]byte, 64)
				req.Upsertions = append(req.Upsertions, u)
				return req
			},
			code: topicCode(func(r *kmsg.AlterUserSCRAMCredentialsResponse) int16 { return r.Results[0].ErrorCode }),
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "CreateAcls", grant: clusterACL(acl.OpAlter),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrCreateACLsRequest()
				req.Version = 3
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, res+"-other", kmsg.ACLResourcePatternTypeLiteral
				c.Principal, c.Host, c.Operation, c.PermissionType = "User:carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
				req.Creations = append(req.Creations, c)
				return req
			},
			code: topicCode(func(r *kmsg.CreateACLsResponse) int16 { return r.Results[0].ErrorCode }),
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "DeleteAcls", grant: clusterACL(acl.OpAlter),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDeleteACLsRequest()
				req.Version = 3
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.StringPtr(res+"-none"), kmsg.ACLResourcePatternTypeLiteral
				f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
				req.Filters = append(req.Filters, f)
				return req
			},
			code: topicCode(func(r *kmsg.DeleteACLsResponse) int16 { return r.Results[0].ErrorCode }),
			ok:   0, denied: kerr.ClusterAuthorizationFailed.Code},
	}, clusterRows()...)
}

// clusterRows are the rows of the requests about the cluster whose
// answer carries one top-level error code: allowed by op on the cluster
// (answered ok), denied with CLUSTER_AUTHORIZATION_FAILED, each named
// after its request. Another such request is one more line here.
func clusterRows() []authzCase {
	unsupported := kerr.UnsupportedVersion.Code
	var rows []authzCase
	for _, r := range []struct {
		op  acl.Operation
		req func(res string) kmsg.Request
		ok  int16
	}{
		{acl.OpDescribe, build(kmsg.NewPtrListPartitionReassignmentsRequest, 0, nil), 0},
		{acl.OpDescribe, build(kmsg.NewPtrDescribeLogDirsRequest, 4, nil), 0},
		// One broker is its own controller: a static quorum of one.
		{acl.OpAlter, build(kmsg.NewPtrAddRaftVoterRequest, 0, func(r *kmsg.AddRaftVoterRequest, _ string) { r.VoterID, r.TimeoutMillis = 7, 1000 }), unsupported},
		{acl.OpAlter, build(kmsg.NewPtrRemoveRaftVoterRequest, 0, func(r *kmsg.RemoveRaftVoterRequest, _ string) { r.VoterID = 7 }), unsupported},
		{acl.OpAlter, build(kmsg.NewPtrUnregisterBrokerRequest, 0, func(r *kmsg.UnregisterBrokerRequest, _ string) { r.BrokerID = 7 }), unsupported},
		{acl.OpAlter, build(kmsg.NewPtrUpdateFeaturesRequest, 2, func(r *kmsg.UpdateFeaturesRequest, _ string) {
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 1, 1
			r.FeatureUpdates = append(r.FeatureUpdates, u)
		}), 0},
		{acl.OpDescribeConfigs, build(kmsg.NewPtrDescribeClientQuotasRequest, 1, nil), 0},
		{acl.OpDescribe, build(kmsg.NewPtrDescribeUserSCRAMCredentialsRequest, 0, nil), 0},
		{acl.OpDescribe, build(kmsg.NewPtrDescribeACLsRequest, 3, func(r *kmsg.DescribeACLsRequest, _ string) {
			r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		}), 0},
	} {
		rows = append(rows, authzCase{name: kmsg.NameForKey(r.req("").Key()), grant: clusterACL(r.op), req: r.req,
			code: errorCode, ok: r.ok, denied: kerr.ClusterAuthorizationFailed.Code})
	}
	return rows
}

// build returns a maker of a request (newReq) at version v, its fields
// set by set (nil: none) for the row's resource res.
func build[R kmsg.Request](newReq func() R, v int16, set func(r R, res string)) func(res string) kmsg.Request {
	return func(res string) kmsg.Request {
		r := newReq()
		r.SetVersion(v)
		if set != nil {
			set(r, res)
		}
		return r
	}
}

// errorCode is the top-level error code of a response (its ErrorCode).
func errorCode(r kmsg.Response) int16 {
	return int16(reflect.ValueOf(r).Elem().FieldByName("ErrorCode").Int())
}

var (
	produceCode          = topicCode(func(r *kmsg.ProduceResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	fetchCode            = topicCode(func(r *kmsg.FetchResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	metadataCode         = topicCode(func(r *kmsg.MetadataResponse) int16 { return r.Topics[0].ErrorCode })
	describeConfigsCode  = topicCode(func(r *kmsg.DescribeConfigsResponse) int16 { return r.Resources[0].ErrorCode })
	createTopicsCode     = topicCode(func(r *kmsg.CreateTopicsResponse) int16 { return r.Topics[0].ErrorCode })
	incrementalAlterCode = topicCode(func(r *kmsg.IncrementalAlterConfigsResponse) int16 { return r.Resources[0].ErrorCode })
	offsetCommitCode     = topicCode(func(r *kmsg.OffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
)

func metadataReq(autoCreate bool) func(res string) kmsg.Request {
	return func(res string) kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 9, autoCreate
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(res)
		req.Topics = append(req.Topics, rt)
		return req
	}
}

func offsetFetchReq(res string) kmsg.Request {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, res
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = res, []int32{0}
	req.Topics = append(req.Topics, rt)
	return req
}

func findCoordinatorReq(typ int8) func(res string) kmsg.Request {
	return func(res string) kmsg.Request {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorType = 3, res, typ
		return req
	}
}

func createTopicsReq(res string) kmsg.Request {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = res, 1, 1
	req.Topics = append(req.Topics, rt)
	return req
}

func initPIDReq(transactional bool) func(res string) kmsg.Request {
	return func(res string) kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.ProducerID, req.ProducerEpoch, req.TransactionTimeoutMillis = 4, -1, -1, 60000
		if transactional {
			req.TransactionalID = kmsg.StringPtr(res)
		}
		return req
	}
}

func describeConfigsReq(typ kmsg.ConfigResourceType) func(res string) kmsg.Request {
	return func(res string) kmsg.Request {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, res
		if typ == resourceBroker {
			rr.ResourceName = "0"
		}
		req.Resources = append(req.Resources, rr)
		return req
	}
}

func incrementalAlterReq(typ kmsg.ConfigResourceType) func(res string) kmsg.Request {
	return func(res string) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, res
		name := "retention.ms"
		if typ == resourceBroker {
			rr.ResourceName, name = "0", "log.retention.ms"
		}
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr("60000")
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		return req
	}
}

// TestAuthorizationMatrix: for each request a client can make, a
// principal without the ACL Kafka asks for gets Kafka's error code, and
// with it the request goes through (to the answer it gets without an
// authorizer). allow.everyone.if.no.acl.found is off; the resources of
// each row are named after the row, so rows do not see each other's ACLs.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	runAuthzCases(t, b, b.rawAs(t, "bob"), b.rawAs(t, "alice"), "m", authzCases())
}

// runAuthzCases runs each case as a subtest on b: bob (no ACLs) is
// denied, alice once granted the case's ACLs gets the allowed answer,
// and bob is still denied after alice's grant. The resources of case i
// are named prefix + i, so cases do not see each other's ACLs.
func runAuthzCases(t *testing.T, b *aclBroker, bob, alice *rawConn, prefix string, cases []authzCase) {
	for i, c := range cases {
		res := fmt.Sprintf("%s%02d", prefix, i)
		t.Run(c.name, func(t *testing.T) {
			bob.t, alice.t = t, t
			if c.setup != nil {
				c.setup(t, b, res)
			}
			if got := c.code(bob.roundTrip(c.req(res))); got != c.denied {
				t.Errorf("without ACLs: error %d (%v), want %d (%v)", got, kerr.ErrorForCode(got), c.denied, kerr.ErrorForCode(c.denied))
			}
			b.grant(t, c.grant("User:alice", res)...)
			if got := c.code(alice.roundTrip(c.req(res))); got != c.ok {
				t.Errorf("with %v: error %d (%v), want %d (%v)", c.grant("User:alice", res), got, kerr.ErrorForCode(got), c.ok, kerr.ErrorForCode(c.ok))
			}
			// The same principal's ACL does not help another one.
			if got := c.code(bob.roundTrip(c.req(res))); got != c.denied {
				t.Errorf("bob after alice's grant: error %d, want %d", got, c.denied)
			}
		})
	}
}
