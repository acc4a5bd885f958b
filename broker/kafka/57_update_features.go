package kafka

// UpdateFeatures (key 57), versions 0-2.
//
// weir's feature levels are fixed (features.go), so this answers as
// Kafka's controller (FeatureControlManager.updateFeatures) answers a
// change its quorum does not support: ALTER on the cluster is needed
// (CLUSTER_AUTHORIZATION_FAILED); then each update in turn, the first
// failing one failing the whole request with INVALID_UPDATE_VERSION
// (not retriable) and Kafka's message, e.g. "The update failed for all
// features since the following feature had an error: Invalid update
// version 2 for feature transaction.version. Local controller 1 only
// supports versions 1". Checks, in Kafka's order: an unknown upgrade
// type, a level below 0, a level outside the supported range ("...
// does not support this feature." where only 0 is supported), and for
// the current level a downgrade type on an upgrade or the reverse cannot
// arise. A feature weir does not support at level 0 (its current level)
// succeeds if Kafka knows the name, else "Feature <name> not found." as
// Kafka's Feature.featureFromName. An update to the current level succeeds and changes nothing;
// v0-1 then list every feature with NONE, v2 only the top-level error.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.UpdateFeatures.Int16(), 0, 2, handleUpdateFeatures) }

// kafkaFeatures are the other features Kafka 4.4 knows (Feature.java);
// weir supports none of them, so only their level 0 is accepted.
var kafkaFeatures = map[string]bool{"kraft.version": true, "eligible.leader.replicas.version": true,
	"share.version": true, "streams.version": true}

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeSafeDowngrade   = 2
	upgradeTypeUnsafeDowngrade = 3
)

func handleUpdateFeatures(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if !s.authorizeCluster(r, acl.OpAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, u := range req.FeatureUpdates {
		if msg := s.featureUpdateError(req.Version, u); msg != "" {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			m := "The update failed for all features since the following feature had an error: " + msg
			resp.ErrorMessage = &m
			return resp, nil
		}
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// featureUpdateError is Kafka's message for an update it refuses, "" when
// the update is to the current level (nothing to do).
func (s *Server) featureUpdateError(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate) string {
	typ := u.UpgradeType
	if version == 0 {
		typ = upgradeTypeUpgrade
		if u.AllowDowngrade {
			typ = upgradeTypeSafeDowngrade
		}
	}
	invalid := func(why string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, why)
	}
	if typ < upgradeTypeUpgrade || typ > upgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if u.MaxVersionLevel < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	f, known := featureByName(u.Feature)
	if !known && u.MaxVersionLevel == 0 {
		// Level 0 is within every unsupported feature's range (0-0);
		// Kafka then looks the feature up by name.
		if kafkaFeatures[u.Feature] {
			return ""
		}
		return invalid("Feature " + u.Feature + " not found.")
	}
	if !known || u.MaxVersionLevel < f.min || u.MaxVersionLevel > f.max {
		what := fmt.Sprintf("Local controller %d", s.cfg.NodeID)
		if f.max == 0 {
			return invalid(what + " does not support this feature.")
		}
		rng := fmt.Sprint(f.min)
		if f.min != f.max {
			rng = fmt.Sprintf("%d-%d", f.min, f.max)
		}
		return invalid(what + " only supports versions " + rng)
	}
	return ""
}
