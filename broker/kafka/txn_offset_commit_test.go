package kafka

import (
	"fmt"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func txnOffsetCommitReq(version int16, txnID, grp string, parts map[string][]int32) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = version
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, grp, 1, 0
	topics := make([]string, 0, len(parts))
	for topic := range parts {
		topics = append(topics, topic)
	}
	sort.Strings(topics)
	for _, topic := range topics {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range parts[topic] {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 10
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// txnCodes maps "topic/partition" to its error code.
func txnCodes(t *testing.T, r kmsg.Response) map[string]int16 {
	t.Helper()
	out := map[string]int16{}
	for _, rt := range r.(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			out[fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	return out
}

// TestTxnOffsetCommitAuthorization checks Kafka's order of checks: WRITE on
// the transactional id, READ on the group, READ on each topic, then
// unknown topics and partitions; only then does the request reach the
// transaction (verification) and the group.
func TestTxnOffsetCommitAuthorization(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	withTopic(t, b, "tt") // one partition
	alice := b.rawAs(t, "alice")
	req := txnOffsetCommitReq(3, "tx1", "g1", map[string][]int32{"tt": {0, 5}, "nosuch": {0}})
	all := func(code int16) map[string]int16 {
		return map[string]int16{"tt/0": code, "tt/5": code, "nosuch/0": code}
	}
	check := func(step string, want map[string]int16) {
		t.Helper()
		got := txnCodes(t, alice.roundTrip(req))
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s error %v, want %v (all: %v)", step, k, kerr.ErrorForCode(got[k]), kerr.ErrorForCode(w), got)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: answered %v, want %d partitions", step, got, len(want))
		}
	}
	check("no ACLs", all(kerr.TransactionalIDAuthorizationFailed.Code))
	b.grant(t, rule("User:alice", acl.OpWrite, acl.ResourceTransactionalID, "tx1", acl.PatternLiteral))
	check("transactional id only", all(kerr.GroupAuthorizationFailed.Code))
	b.grant(t, rule("User:alice", acl.OpRead, acl.ResourceGroup, "g1", acl.PatternLiteral))
	check("no topic ACLs", all(kerr.TopicAuthorizationFailed.Code))
	b.grant(t, rule("User:alice", acl.OpRead, acl.ResourceTopic, "tt", acl.PatternLiteral),
		rule("User:alice", acl.OpRead, acl.ResourceTopic, "nosuch", acl.PatternLiteral))
	got := txnCodes(t, alice.roundTrip(req))
	if got["tt/5"] != kerr.UnknownTopicOrPartition.Code || got["nosuch/0"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partitions: %v", got)
	}
	// Producer 1 has no transaction: the partition is refused, with an
	// error that is not about authorization, and nothing is committed.
	switch c := got["tt/0"]; c {
	case 0, kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.TransactionalIDAuthorizationFailed.Code:
		t.Errorf("tt/0 outside a transaction: error %v", kerr.ErrorForCode(c))
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group, fetch.RequireStable = 7, "g1", true
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "tt", Partitions: []int32{0}}}
	fr := request[*kmsg.OffsetFetchResponse](t, b.admin, fetch)
	if fr.ErrorCode != 0 || fr.Topics[0].Partitions[0].Offset != -1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Errorf("OffsetFetch after refused TxnOffsetCommit: %+v", fr)
	}
}

// TestTxnOffsetCommitVersions sends every supported version over the
// wire: each is answered in its own version (v0-2 without member fields).
func TestTxnOffsetCommitVersions(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t, testGroupConfig())
	createTopic(t, b, "tv", 1, nil)
	raw := dialRaw(t, b.addr)
	for v := int16(0); v <= 5; v++ {
		req := txnOffsetCommitReq(v, "tx", "gv", map[string][]int32{"tv": {0, 3}})
		if v >= 3 {
			req.Generation, req.MemberID = 4, "zombie"
		}
		resp := raw.roundTrip(req).(*kmsg.TxnOffsetCommitResponse)
		got := txnCodes(t, resp)
		if got["tv/3"] != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("v%d: tv/3 error %v", v, kerr.ErrorForCode(got["tv/3"]))
		}
		if c := got["tv/0"]; c == 0 || c == kerr.CoordinatorLoadInProgress.Code && v < 2 {
			t.Errorf("v%d: tv/0 outside a transaction: error %v", v, kerr.ErrorForCode(c))
		}
	}
	req := txnOffsetCommitReq(3, "tx", "", map[string][]int32{"tv": {0}})
	if got := txnCodes(t, raw.roundTrip(req)); got["tv/0"] != kerr.InvalidGroupID.Code {
		t.Errorf("empty group id: %v", got)
	}
}
