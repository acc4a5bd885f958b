package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

// TestApiVersionsFeatures: v3 lists the supported features whose minimum
// is not 0 (KAFKA-17492), v4 all of them; finalized features leave out
// level 0; v0-2 carry none.
func TestApiVersionsFeatures(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	rc := dialRaw(t, b.addr)
	for _, v := range []int16{2, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := rc.roundTrip(req).(*kmsg.ApiVersionsResponse)
		var sup, fin []string
		for _, f := range resp.SupportedFeatures {
			sup = append(sup, f.Name+":"+string(rune('0'+f.MinVersion))+"-"+string(rune('0'+f.MaxVersion)))
		}
		for _, f := range resp.FinalizedFeatures {
			fin = append(fin, f.Name)
			if f.MinVersionLevel != f.MaxVersionLevel {
				t.Errorf("v%d finalized %+v", v, f)
			}
		}
		switch v {
		case 2:
			if len(sup) != 0 || len(fin) != 0 {
				t.Errorf("v2: %v %v", sup, fin)
			}
		case 3, 4:
			wantSup := "group.version:1-1 metadata.version:I-I transaction.version:1-1" // 25 = 'I'-'0'
			if got := strings.Join(sup, " "); got != wantSup || strings.Join(fin, " ") != "group.version metadata.version transaction.version" || resp.FinalizedFeaturesEpoch != 0 {
				t.Errorf("v%d: supported %q finalized %v epoch %d", v, got, fin, resp.FinalizedFeaturesEpoch)
			}
		}
	}
}

// TestUpdateFeatures: Kafka's controller answers, request version by
// version: ALTER on the cluster, INVALID_UPDATE_VERSION for anything weir
// cannot change (an unknown upgrade type, a negative level, outside the
// supported range), success with per-feature results below v2 for the
// current level.
func TestUpdateFeatures(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	rc := dialRaw(t, b.listenerAddr("PLAINTEXT"))
	update := func(v int16, typ int8, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesResponse {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = v
		req.TimeoutMillis = 5000
		for _, u := range updates {
			u.UpgradeType = typ
			req.FeatureUpdates = append(req.FeatureUpdates, u)
		}
		return rc.roundTrip(req).(*kmsg.UpdateFeaturesResponse)
	}
	fu := func(name string, level int16) kmsg.UpdateFeaturesRequestFeatureUpdate {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel = name, level
		return u
	}
	msg := func(r *kmsg.UpdateFeaturesResponse) string {
		if r.ErrorMessage == nil {
			return ""
		}
		return *r.ErrorMessage
	}
	prefix := "The update failed for all features since the following feature had an error: "
	for _, c := range []struct {
		v    int16
		typ  int8
		u    []kmsg.UpdateFeaturesRequestFeatureUpdate
		want string
	}{
		{2, 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{fu("metadata.version", 26)}, "Invalid update version 26 for feature metadata.version. Local controller 0 only supports versions 25"},
		{1, 2, []kmsg.UpdateFeaturesRequestFeatureUpdate{fu("transaction.version", 0)}, "Invalid update version 0 for feature transaction.version. Local controller 0 only supports versions 1"},
		{2, 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{fu("transaction.version", 1), fu("share.version", 1)}, "Invalid update version 1 for feature share.version. Local controller 0 does not support this feature."},
		{2, 7, []kmsg.UpdateFeaturesRequestFeatureUpdate{fu("transaction.version", 1)}, "Invalid update version 1 for feature transaction.version. The controller does not support the given upgrade type."},
		{2, 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{fu("group.version", -1)}, "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{2, 1, []kmsg.UpdateFeaturesRequestFeatureUpdate{fu("no.such.version", 0)}, "Invalid update version 0 for feature no.such.version. Feature no.such.version not found."},
	} {
		r := update(c.v, c.typ, c.u...)
		if r.ErrorCode != kerr.InvalidUpdateVersion.Code || msg(r) != prefix+c.want || len(r.Results) != 0 {
			t.Errorf("v%d %+v: %d %q %v, want INVALID_UPDATE_VERSION %q", c.v, c.u, r.ErrorCode, msg(r), r.Results, c.want)
		}
	}
	for _, v := range []int16{0, 1, 2} {
		r := update(v, 1, fu("transaction.version", 1), fu("metadata.version", 25), fu("share.version", 0))
		if r.ErrorCode != 0 || (v <= 1) != (len(r.Results) == 3) {
			t.Errorf("v%d current levels: %+v", v, r)
		}
		for _, res := range r.Results {
			if res.ErrorCode != 0 {
				t.Errorf("v%d: %+v", v, res)
			}
		}
	}
	// Without ALTER on the cluster.
	bob := b.as(t, "bob")
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.FeatureUpdates = append(req.FeatureUpdates, fu("transaction.version", 1))
	resp, err := bob.Broker(0).Request(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.UpdateFeaturesResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob: %+v", r)
	}
}
