package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestApiVersionsAdvertisesRegistrations(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cl := b.client()
	for _, v := range []int16{0, 1, 2, 3} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "weir-test", "1"
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		for _, a := range registeredAPIs() {
			if got[a.key] != [2]int16{a.min, a.max} {
				t.Errorf("v%d: key %d advertised %v, registered %d..%d", v, a.key, got[a.key], a.min, a.max)
			}
		}
		if len(got) != len(registeredAPIs()) {
			t.Errorf("v%d: %d keys advertised, %d registered", v, len(got), len(registeredAPIs()))
		}
		if got[18] != [2]int16{0, 4} || got[3] != [2]int16{0, 13} {
			t.Errorf("v%d: ApiVersions %v Metadata %v", v, got[18], got[3])
		}
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cl := b.client()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	// v4+ with auto-creation allowed creates the topic with num.partitions.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto1")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("auto-create: %+v", resp.Topics)
	}
	if resp.ControllerID != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].Port == 0 || resp.ClusterID == nil || *resp.ClusterID != "test-cluster" {
		t.Fatalf("brokers %+v controller %d cluster %v", resp.Brokers, resp.ControllerID, resp.ClusterID)
	}
	if p := resp.Topics[0].Partitions[0]; p.Leader != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
		t.Fatalf("partition %+v", p)
	}

	// Not allowed by the request: UNKNOWN_TOPIC_OR_PARTITION, not created.
	req.AllowAutoTopicCreation = false
	req.Topics[0].Topic = kmsg.StringPtr("auto2")
	resp, err = req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("no auto-create: error %d", resp.Topics[0].ErrorCode)
	}
	// Illegal name.
	req.AllowAutoTopicCreation = true
	req.Topics[0].Topic = kmsg.StringPtr("bad/name")
	resp, err = req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("bad name: error %d", resp.Topics[0].ErrorCode)
	}

	// v0: empty list = all topics; v1+: empty = none, null = all.
	for _, tc := range []struct {
		v      int16
		topics []kmsg.MetadataRequestTopic
		want   int
	}{{0, []kmsg.MetadataRequestTopic{}, 1}, {1, []kmsg.MetadataRequestTopic{}, 0}, {1, nil, 1}, {9, nil, 1}} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = tc.v
		req.Topics = tc.topics
		resp := dialRaw(t, b.addr).roundTrip(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != tc.want {
			t.Errorf("v%d topics=%v: %d topics, want %d", tc.v, tc.topics, len(resp.Topics), tc.want)
		}
	}

	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !tds.Has("auto1") || tds.Has("auto2") {
		t.Fatalf("topics: %v", tds.Names())
	}
}
