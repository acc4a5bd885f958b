package kafka

// Feature flags (KIP-584) as weir reports them: in ApiVersions v3+
// (SupportedFeatures, FinalizedFeatures, FinalizedFeaturesEpoch; the
// Admin client's describeFeatures and kafka-features describe read these)
// and as UpdateFeatures (57_update_features.go) checks them.
//
// weir's features are fixed by what the software implements; none can be
// changed, so each supported range is the one finalized level:
//
//	metadata.version     level 25, Kafka's 4.0-IV3: the metadata version
//	                     of a Kafka 4.0 cluster, whose protocol versions
//	                     weir speaks (no ELR, no share groups)
//	transaction.version  1: transactions without KIP-890 part 2 (see
//	                     broker/txncoord: EndTxn up to v4, clients add
//	                     partitions explicitly and keep their epoch).
//	                     Java clients enable part 2 only at level 2.
//	                     (Kafka's level 1 also means flexible
//	                     __transaction_state values; weir's coordinator
//	                     writes v0 values, which no client reads.)
//	group.version        1: KIP-848's consumer group protocol beside the
//	                     classic one (broker/group/consumer.go); weir cannot
//	                     turn it off, so level 0 is not supported
//
// As Kafka: a finalized level 0 is not listed, and ApiVersions below v4
// leaves out features whose supported minimum is 0 (KAFKA-17492).
// kraft.version is not reported: weir's controller quorum is not KRaft.

import "github.com/twmb/franz-go/pkg/kmsg"

type feature struct {
	name      string
	min, max  int16 // supported range
	finalized int16
}

// features is sorted by name.
var features = []feature{
	{name: "group.version", min: 1, max: 1, finalized: 1},
	{name: "metadata.version", min: 25, max: 25, finalized: 25},
	{name: "transaction.version", min: 1, max: 1, finalized: 1},
}

// featuresEpoch is FinalizedFeaturesEpoch: the finalized levels never
// change, so one epoch on every broker (Kafka: the metadata offset of the
// last feature change; -1 would mean "none known" to clients).
const featuresEpoch = 0

func featureByName(name string) (feature, bool) {
	for _, f := range features {
		if f.name == name {
			return f, true
		}
	}
	return feature{}, false
}

// setFeatures fills the feature fields of an ApiVersions v3+ response.
func setFeatures(resp *kmsg.ApiVersionsResponse) {
	if resp.Version < 3 {
		return
	}
	resp.FinalizedFeaturesEpoch = featuresEpoch
	for _, f := range features {
		if resp.Version >= 4 || f.min != 0 {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
		if f.finalized != 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.finalized, f.finalized
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
}
