package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAutoCreateKeepsTopicName: requests are decoded aliasing the
// connection's read buffer, which the next request on the connection
// overwrites. A topic auto-created by Metadata must keep its own copy of
// the name (an aliased name once turned into garbage and crashed the
// broker in a metrics label).
func TestAutoCreateKeepsTopicName(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	rc := dialRaw(t, b.addr)
	names := []string{"alias-topic-aaaa", "alias-topic-zzzz"}
	for _, name := range names {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(7)
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
		resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("auto-creating %s: %+v", name, resp.Topics)
		}
	}
	// Overwrite the read buffer once more with a different request.
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "yyyyyyyyyyyyyyyyyyyy"
	rc.roundTrip(av)

	var got []string
	for _, tp := range b.meta.Image().Topics() {
		got = append(got, tp.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Fatalf("topics in metadata = %q, want %q", got, names)
	}
	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(7)
	all.Topics = nil
	resp := rc.roundTrip(all).(*kmsg.MetadataResponse)
	got = got[:0]
	for _, tp := range resp.Topics {
		got = append(got, *tp.Topic)
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Fatalf("Metadata answers topics %q, want %q", got, names)
	}
}
