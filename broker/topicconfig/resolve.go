package topicconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Entry is one DescribeConfigs result entry. Value is nil for a config
// that has no value (Kafka's null).
type Entry struct {
	Name      string
	Value     *string
	Source    Source
	ReadOnly  bool
	Sensitive bool
	Type      Type
	Doc       string // empty unless documentation was asked for
	Synonyms  []EntrySynonym
}

// IsDefault is DescribeConfigs v0's is_default flag.
func (e Entry) IsDefault() bool { return e.Source == SourceDefault }

// EntrySynonym is one DescribeConfigs synonym, in precedence order.
type EntrySynonym struct {
	Name   string
	Value  *string
	Source Source
}

// Resolved is a topic's effective configuration: its overrides, validated,
// over the broker's configuration. The typed fields hold the effective
// values; it is a value and safe to share once built.
type Resolved struct {
	CleanupPolicy        []string // cleanup.policy items
	Compact              bool     // cleanup.policy contains "compact"
	Delete               bool     // cleanup.policy contains "delete"
	RetentionMs          int64    // retention.ms; -1 = unlimited
	RetentionBytes       int64    // retention.bytes; negative = unlimited
	SegmentBytes         int32    // internal.segment.bytes if set, else segment.bytes
	SegmentMs            int64    // segment.ms
	IndexIntervalBytes   int32    // index.interval.bytes
	DeleteRetentionMs    int64    // delete.retention.ms
	MinCompactionLagMs   int64    // min.compaction.lag.ms
	MaxCompactionLagMs   int64    // max.compaction.lag.ms
	MinCleanableRatio    float64  // min.cleanable.dirty.ratio
	FlushMessages        int64    // flush.messages
	FlushMs              int64    // flush.ms
	MaxMessageBytes      int32    // max.message.bytes
	LogAppendTime        bool     // message.timestamp.type == LogAppendTime
	TimestampBeforeMaxMs int64    // message.timestamp.before.max.ms
	TimestampAfterMaxMs  int64    // message.timestamp.after.max.ms
	MinInsyncReplicas    int32    // min.insync.replicas
	CompressionType      string   // compression.type

	broker    *Broker
	overrides map[string]string
}

// Resolve validates a topic's overrides with Kafka's defaults as the broker
// configuration. See Broker.Resolve.
func Resolve(overrides map[string]string) (Resolved, error) {
	return Defaults().Resolve(overrides)
}

// Validate checks a topic's overrides (names, values, cross-field rules)
// against the broker's configuration without keeping the result.
func (b *Broker) Validate(overrides map[string]string) error {
	_, err := b.Resolve(overrides)
	return err
}

// Resolve validates a topic's overrides (topic config names only) and
// returns the effective configuration. A value not overridden comes from the
// first broker synonym set at startup (scaled: log.retention.hours=1 gives
// retention.ms=3600000), else from Kafka's default. Errors wrap
// ErrUnknownConfig ("unknown topic config name: x") or ErrInvalidValue, name
// the key and value, and say what is allowed; the first error in name order
// is returned so messages are deterministic.
func (b *Broker) Resolve(overrides map[string]string) (Resolved, error) {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	slices.Sort(names)
	ov := make(map[string]string, len(overrides))
	for _, n := range names {
		d, ok := topicByName[n]
		if !ok {
			return Resolved{}, fmt.Errorf("%w: unknown topic config name: %s", ErrUnknownConfig, n)
		}
		v := strings.TrimSpace(overrides[n])
		if err := d.Validate(v); err != nil {
			return Resolved{}, err
		}
		ov[n] = v
	}
	r := Resolved{broker: b.snapshot(), overrides: ov}
	get := func(name string) string { v, _, _ := r.Value(name); return v }
	i64 := func(name string) int64 { n, _ := parseInt(get(name), 64); return n }
	i32 := func(name string) int32 { return int32(i64(name)) }

	r.CleanupPolicy = parseList(get(CleanupPolicy))
	for _, p := range r.CleanupPolicy {
		switch p {
		case cleanupPolicyCompact:
			r.Compact = true
		case cleanupPolicyDelete:
			r.Delete = true
		}
	}
	r.RetentionMs = i64(RetentionMs)
	r.RetentionBytes = i64(RetentionBytes)
	r.SegmentBytes = i32(SegmentBytes)
	if v, ok := ov[InternalSegmentBytes]; ok {
		n, _ := parseInt(v, 32)
		r.SegmentBytes = int32(n)
	}
	r.SegmentMs = i64(SegmentMs)
	r.IndexIntervalBytes = i32(IndexIntervalBytes)
	r.DeleteRetentionMs = i64(DeleteRetentionMs)
	r.MinCompactionLagMs = i64(MinCompactionLagMs)
	r.MaxCompactionLagMs = i64(MaxCompactionLagMs)
	r.MinCleanableRatio, _ = parseDouble(get(MinCleanableDirtyRatio))
	r.FlushMessages = i64(FlushMessages)
	r.FlushMs = i64(FlushMs)
	r.MaxMessageBytes = i32(MaxMessageBytes)
	r.LogAppendTime = get(MessageTimestampType) == timestampLogAppendTime
	r.TimestampBeforeMaxMs = i64(MessageTimestampBeforeMaxMs)
	r.TimestampAfterMaxMs = i64(MessageTimestampAfterMaxMs)
	r.MinInsyncReplicas = i32(MinInsyncReplicas)
	r.CompressionType = get(CompressionType)

	if r.MinCompactionLagMs > r.MaxCompactionLagMs {
		return Resolved{}, fmt.Errorf("%w: conflict topic config setting %s (%d) > %s (%d)",
			ErrInvalidValue, MinCompactionLagMs, r.MinCompactionLagMs, MaxCompactionLagMs, r.MaxCompactionLagMs)
	}
	if v, _ := parseBool(get(RemoteStorageEnable)); v {
		return Resolved{}, fmt.Errorf("%w: invalid value %q for configuration %s: tiered storage is not supported by weir; only false is accepted",
			ErrInvalidValue, ov[RemoteStorageEnable], RemoteStorageEnable)
	}
	return r, nil
}

// Overrides returns a copy of the topic's validated overrides (values
// trimmed), the thing to persist.
func (r Resolved) Overrides() map[string]string { return maps.Clone(r.overrides) }

// Broker returns the broker configuration r was resolved against.
func (r Resolved) Broker() *Broker { return r.broker }

// Value returns topic config name's effective value and its source; ok is
// false for an unknown name (or an internal config that is not set).
func (r Resolved) Value(name string) (value string, src Source, ok bool) {
	d, known := topicByName[name]
	if !known {
		return "", SourceUnknown, false
	}
	if v, set := r.overrides[name]; set {
		return v, SourceDynamicTopicConfig, true
	}
	b := r.broker
	if b == nil {
		b = Defaults()
	}
	for _, s := range d.Synonyms {
		if v, src, set := b.lookup(s.Name); set {
			return scaleValue(strings.TrimSpace(v), s.Scale), src, true
		}
	}
	if !d.HasDefault {
		return "", SourceUnknown, false
	}
	return d.Default, SourceDefault, true
}

// Describe returns DescribeConfigs entries for the topic: every topic config
// (names nil or empty; internal ones only when set) or only those named
// (unknown names are skipped, as Kafka does). Synonyms, when asked for, are
// listed as Kafka's ConfigHelper does: the topic override, then the broker
// synonyms by source (dynamic per-broker, dynamic default, static,
// default), all before the first broker name's own entry dropped.
func (r Resolved) Describe(names []string, includeSynonyms, includeDocs bool) []Entry {
	var want []string
	if len(names) == 0 {
		want = TopicNames()
		for n := range r.overrides {
			if topicByName[n].Internal {
				want = append(want, n)
			}
		}
		slices.Sort(want)
	} else {
		for _, n := range names {
			if d, ok := topicByName[n]; ok && (!d.Internal || r.overrides[n] != "") {
				want = append(want, n)
			}
		}
	}
	b := r.broker
	if b == nil {
		b = Defaults()
	}
	out := make([]Entry, 0, len(want))
	for _, name := range want {
		d := topicByName[name]
		e := Entry{Name: name, Type: d.Type, Source: SourceDefault}
		if v, _, ok := r.Value(name); ok {
			e.Value = strPtr(v)
		}
		if includeDocs {
			e.Doc = d.Doc
		}
		// Kafka's ConfigHelper.createTopicConfigEntry: the override, then
		// the broker synonyms of the first broker name.
		var syns []EntrySynonym
		if v, set := r.overrides[name]; set {
			syns = append(syns, EntrySynonym{Name: name, Value: strPtr(v), Source: SourceDynamicTopicConfig})
		}
		if len(d.Synonyms) > 0 {
			first := d.Synonyms[0].Name
			syns = append(syns, b.synonyms(first, brokerSynonyms(first), false)...)
		}
		if len(syns) > 0 {
			e.Source = syns[0].Source
		}
		if includeSynonyms {
			e.Synonyms = syns
		}
		out = append(out, e)
	}
	return out
}
