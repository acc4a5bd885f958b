package kafka

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func electReq(version int16, typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType, req.TimeoutMillis = version, typ, 5000
	if topics == nil {
		return req
	}
	req.Topics = []kmsg.ElectLeadersRequestTopic{}
	for t, ps := range topics {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = t, ps
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// codes flattens a response into "topic-partition" -> code.
func electCodes(resp *kmsg.ElectLeadersResponse) map[string]int16 {
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s-%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

// TestElectLeadersSingleNode: on one broker every partition already has
// its preferred (only) replica as leader; the answers follow Kafka's
// rules per version. Elections on a cluster: broker/brokertest.
func TestElectLeadersSingleNode(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "e", 2, nil)
	rc := dialRaw(t, b.addr)
	for _, v := range []int16{0, 1, 2} {
		resp := rc.roundTrip(electReq(v, 0, map[string][]int32{"e": {0, 1, 7}, "nope": {0}})).(*kmsg.ElectLeadersResponse)
		got := electCodes(resp)
		want := map[string]int16{"e-0": kerr.ElectionNotNeeded.Code, "e-1": kerr.ElectionNotNeeded.Code,
			"e-7": kerr.UnknownTopicOrPartition.Code, "nope-0": kerr.UnknownTopicOrPartition.Code}
		if fmt.Sprint(got) != fmt.Sprint(want) || resp.ErrorCode != 0 {
			t.Fatalf("v%d: %v (top %d), want %v", v, got, resp.ErrorCode, want)
		}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorMessage == nil {
					t.Fatalf("v%d %s-%d: no error message", v, tp.Topic, p.Partition)
				}
			}
		}
	}
	// Unclean: every partition has a leader.
	resp := rc.roundTrip(electReq(2, 1, map[string][]int32{"e": {1}})).(*kmsg.ElectLeadersResponse)
	if c := electCodes(resp)["e-1"]; c != kerr.ElectionNotNeeded.Code {
		t.Fatalf("unclean: %d", c)
	}
	// All partitions: the topics are listed, the partitions that needed
	// no election are not.
	resp = rc.roundTrip(electReq(2, 0, nil)).(*kmsg.ElectLeadersResponse)
	if len(resp.Topics) == 0 || len(electCodes(resp)) != 0 {
		t.Fatalf("all: %+v", resp.Topics)
	}
	// An unknown election type.
	resp = rc.roundTrip(electReq(2, 5, map[string][]int32{"e": {0}})).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || electCodes(resp)["e-0"] != kerr.InvalidRequest.Code {
		t.Fatalf("election type 5: top %d, %v", resp.ErrorCode, electCodes(resp))
	}
}

// TestWriteElectLeadersFuzzSeeds adds ElectLeaders frames to FuzzDispatch's
// corpus (files elect-leaders-*) when WEIR_WRITE_FUZZ_CORPUS=1; otherwise
// it checks they are there.
func TestWriteElectLeadersFuzzSeeds(t *testing.T) {
	t.Parallel()
	var seeds [][]byte
	for _, r := range []*kmsg.ElectLeadersRequest{
		electReq(0, 0, map[string][]int32{"fuzz": {0, 1}}),
		electReq(1, 1, map[string][]int32{"fuzz": {0}}),
		electReq(2, 0, nil),
		electReq(2, 1, map[string][]int32{"fuzz": {1, -1}, "nope": {0}}),
	} {
		fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed")).AppendRequest(nil, r, 7)
		seeds = append(seeds, fr[4:])
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDispatch")
	for i, s := range seeds {
		path := filepath.Join(dir, fmt.Sprintf("elect-leaders-%d", i))
		if os.Getenv("WEIR_WRITE_FUZZ_CORPUS") != "1" {
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("seed %s missing (%v): run with WEIR_WRITE_FUZZ_CORPUS=1", path, err)
			}
			continue
		}
		if err := os.WriteFile(path, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
