package topicconfig

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestResolveDefaultsAreKafkas(t *testing.T) {
	r, err := Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"cleanup.policy", strings.Join(r.CleanupPolicy, ","), "delete"},
		{"compact", r.Compact, false},
		{"delete", r.Delete, true},
		{"retention.ms", r.RetentionMs, int64(7 * 24 * 3600 * 1000)},
		{"retention.bytes", r.RetentionBytes, int64(-1)},
		{"segment.bytes", r.SegmentBytes, int32(1 << 30)},
		{"segment.ms", r.SegmentMs, int64(7 * 24 * 3600 * 1000)},
		{"index.interval.bytes", r.IndexIntervalBytes, int32(4096)},
		{"delete.retention.ms", r.DeleteRetentionMs, int64(86400000)},
		{"min.compaction.lag.ms", r.MinCompactionLagMs, int64(0)},
		{"max.compaction.lag.ms", r.MaxCompactionLagMs, int64(math.MaxInt64)},
		{"flush.messages", r.FlushMessages, int64(math.MaxInt64)},
		{"flush.ms", r.FlushMs, int64(math.MaxInt64)},
		{"max.message.bytes", r.MaxMessageBytes, int32(1048588)},
		{"LogAppendTime", r.LogAppendTime, false},
		{"message.timestamp.before.max.ms", r.TimestampBeforeMaxMs, int64(math.MaxInt64)},
		{"message.timestamp.after.max.ms", r.TimestampAfterMaxMs, int64(math.MaxInt64)},
		{"min.insync.replicas", r.MinInsyncReplicas, int32(1)},
		{"compression.type", r.CompressionType, "producer"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, name := range TopicNames() {
		if _, src, ok := r.Value(name); !ok || src != SourceDefault {
			t.Errorf("Value(%s): ok=%v source=%v, want a DEFAULT_CONFIG value", name, ok, src)
		}
	}
}

func TestBrokerDefaults(t *testing.T) {
	b := Defaults()
	if b.NumPartitions() != 1 || b.DefaultReplicationFactor() != 1 || !b.AutoCreateTopics() ||
		b.MessageMaxBytes() != 1048588 || !b.DeleteTopicEnable() {
		t.Fatalf("broker defaults: partitions=%d rf=%d autocreate=%v msgmax=%d",
			b.NumPartitions(), b.DefaultReplicationFactor(), b.AutoCreateTopics(), b.MessageMaxBytes())
	}
	if got := b.ProducerIDExpiration().Hours(); got != 24 {
		t.Fatalf("producer.id.expiration.ms = %vh, want 24h", got)
	}
	if v, src, _ := b.Value("log.retention.hours"); v != "168" || src != SourceDefault {
		t.Fatalf("log.retention.hours = %s (%v)", v, src)
	}
	if v, _, _ := b.Value("log.segment.bytes"); v != "1073741824" {
		t.Fatalf("log.segment.bytes = %s", v)
	}
}

// Every topic default must equal the default its broker synonyms give it,
// and every synonym must be a known broker config.
func TestSynonymTableConsistent(t *testing.T) {
	if len(brokerByName) != len(brokerDefs) || len(topicByName) != len(topicDefs) {
		t.Fatal("a config name is defined twice")
	}
	for _, d := range topicDefs {
		var fromBroker string
		for _, s := range d.Synonyms {
			bd, ok := brokerByName[s.Name]
			if !ok {
				t.Errorf("%s: synonym %s is not a broker config", d.Name, s.Name)
				continue
			}
			if bd.Type != d.Type && !(s.Scale != 1 && bd.Type == TypeInt) {
				t.Errorf("%s (%s): synonym %s has type %s", d.Name, d.Type, s.Name, bd.Type)
			}
			if fromBroker == "" && bd.HasDefault {
				fromBroker = scaleValue(bd.Default, s.Scale)
			}
		}
		if fromBroker != "" && fromBroker != d.Default {
			t.Errorf("%s: topic default %s but broker synonyms give %s", d.Name, d.Default, fromBroker)
		}
		if d.HasDefault {
			if err := d.Validate(d.Default); err != nil {
				t.Errorf("%s: default does not validate: %v", d.Name, err)
			}
		}
	}
	for _, d := range brokerDefs {
		if d.HasDefault {
			if err := d.Validate(d.Default); err != nil {
				t.Errorf("broker %s: default does not validate: %v", d.Name, err)
			}
		}
	}
}

func TestResolveRejects(t *testing.T) {
	cases := []struct {
		key, value string
		sentinel   error
		wantInMsg  []string
	}{
		{"retention.mss", "1", ErrUnknownConfig, []string{"retention.mss"}},
		{"log.retention.hours", "1", ErrUnknownConfig, []string{"log.retention.hours"}},
		{"retention.ms", "abc", ErrInvalidValue, []string{"retention.ms", `"abc"`, "64-bit integer"}},
		{"retention.ms", "-2", ErrInvalidValue, []string{"retention.ms", `"-2"`, "at least -1"}},
		{"segment.bytes", "14", ErrInvalidValue, []string{"segment.bytes", "at least 1048576"}},
		{"segment.bytes", "4294967296", ErrInvalidValue, []string{"segment.bytes", "out of range"}},
		{"segment.ms", "0", ErrInvalidValue, []string{"segment.ms", "at least 1"}},
		{"cleanup.policy", "compact,purge", ErrInvalidValue, []string{"cleanup.policy", `"purge"`, "compact, delete"}},
		{"compression.type", "brotli", ErrInvalidValue, []string{"compression.type", "brotli", "producer"}},
		{"message.timestamp.type", "createtime", ErrInvalidValue, []string{"message.timestamp.type", "CreateTime, LogAppendTime"}},
		{"min.cleanable.dirty.ratio", "1.5", ErrInvalidValue, []string{"min.cleanable.dirty.ratio", "between 0 and 1"}},
		{"min.cleanable.dirty.ratio", "x", ErrInvalidValue, []string{"expected a number"}},
		{"min.insync.replicas", "0", ErrInvalidValue, []string{"min.insync.replicas", "at least 1"}},
		{"unclean.leader.election.enable", "yes", ErrInvalidValue, []string{"unclean.leader.election.enable", "boolean"}},
		{"preallocate", "1", ErrInvalidValue, []string{"preallocate"}},
		{"flush.messages", "0", ErrInvalidValue, []string{"flush.messages", "at least 1"}},
		{"compression.gzip.level", "0", ErrInvalidValue, []string{"-1 or between 1 and 9"}},
		{"compression.lz4.level", "18", ErrInvalidValue, []string{"between 1 and 17"}},
		{"leader.replication.throttled.replicas", "1-2", ErrInvalidValue, []string{"[partitionId]:[brokerId]"}},
		{"remote.storage.enable", "true", ErrInvalidValue, []string{"remote.storage.enable", "tiered storage"}},
		{"internal.segment.bytes", "13", ErrInvalidValue, []string{"internal.segment.bytes", "at least 14"}},
	}
	for _, c := range cases {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			_, err := Resolve(map[string]string{c.key: c.value})
			if !errors.Is(err, c.sentinel) {
				t.Fatalf("err = %v, want %v", err, c.sentinel)
			}
			for _, s := range c.wantInMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestResolveAccepts(t *testing.T) {
	cases := []struct {
		key, value string
		check      func(Resolved) bool
	}{
		{"cleanup.policy", "compact", func(r Resolved) bool { return r.Compact && !r.Delete }},
		{"cleanup.policy", "compact,delete", func(r Resolved) bool { return r.Compact && r.Delete }},
		{"cleanup.policy", " delete , compact ", func(r Resolved) bool { return r.Compact && r.Delete }},
		{"cleanup.policy", "", func(r Resolved) bool { return !r.Compact && !r.Delete }},
		{"retention.ms", "-1", func(r Resolved) bool { return r.RetentionMs == -1 }},
		{"retention.ms", " 1000 ", func(r Resolved) bool { return r.RetentionMs == 1000 }},
		{"retention.bytes", "-5", func(r Resolved) bool { return r.RetentionBytes == -5 }},
		{"segment.bytes", "1048576", func(r Resolved) bool { return r.SegmentBytes == 1<<20 }},
		{"internal.segment.bytes", "1024", func(r Resolved) bool { return r.SegmentBytes == 1024 }},
		{"message.timestamp.type", "LogAppendTime", func(r Resolved) bool { return r.LogAppendTime }},
		{"max.message.bytes", "0", func(r Resolved) bool { return r.MaxMessageBytes == 0 }},
		{"min.insync.replicas", "2", func(r Resolved) bool { return r.MinInsyncReplicas == 2 }},
		{"compression.type", "zstd", func(r Resolved) bool { return r.CompressionType == "zstd" }},
		{"unclean.leader.election.enable", "TRUE", func(Resolved) bool { return true }},
		{"min.cleanable.dirty.ratio", "0.01", func(Resolved) bool { return true }},
		{"leader.replication.throttled.replicas", "*", func(Resolved) bool { return true }},
		{"follower.replication.throttled.replicas", "0:1,1:2", func(Resolved) bool { return true }},
		{"message.downconversion.enable", "false", func(Resolved) bool { return true }},
		{"message.timestamp.difference.max.ms", "1000", func(Resolved) bool { return true }},
		{"compression.zstd.level", "-5", func(Resolved) bool { return true }},
		{"flush.ms", "0", func(r Resolved) bool { return r.FlushMs == 0 }},
	}
	for _, c := range cases {
		t.Run(c.key+"="+c.value, func(t *testing.T) {
			r, err := Resolve(map[string]string{c.key: c.value})
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(r) {
				t.Fatalf("resolved %+v", r)
			}
			if v, src, _ := r.Value(c.key); src != SourceDynamicTopicConfig || v != strings.TrimSpace(c.value) {
				t.Fatalf("Value(%s) = %q %v", c.key, v, src)
			}
		})
	}
}

func TestCompactionLagConflict(t *testing.T) {
	_, err := Resolve(map[string]string{"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "50"})
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "min.compaction.lag.ms (100) > max.compaction.lag.ms (50)") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Resolve(map[string]string{"min.compaction.lag.ms": "50", "max.compaction.lag.ms": "50"}); err != nil {
		t.Fatal(err)
	}
}

func TestBrokerStaticConfigsFeedTopicDefaults(t *testing.T) {
	cases := []struct {
		static    map[string]string
		overrides map[string]string
		name      string
		want      string
		src       Source
	}{
		{map[string]string{"log.retention.hours": "1"}, nil, RetentionMs, "3600000", SourceStaticBroker},
		{map[string]string{"log.retention.minutes": "2", "log.retention.hours": "1"}, nil, RetentionMs, "120000", SourceStaticBroker},
		{map[string]string{"log.retention.ms": "5", "log.retention.minutes": "2"}, nil, RetentionMs, "5", SourceStaticBroker},
		{map[string]string{"log.retention.hours": "-1"}, nil, RetentionMs, "-1", SourceStaticBroker},
		{map[string]string{"log.retention.hours": "1"}, map[string]string{"retention.ms": "7"}, RetentionMs, "7", SourceDynamicTopicConfig},
		{map[string]string{"log.roll.hours": "2"}, nil, SegmentMs, "7200000", SourceStaticBroker},
		{map[string]string{"log.cleanup.policy": "compact"}, nil, CleanupPolicy, "compact", SourceStaticBroker},
		{map[string]string{"message.max.bytes": "2000000"}, nil, MaxMessageBytes, "2000000", SourceStaticBroker},
		{map[string]string{"log.flush.scheduler.interval.ms": "1000"}, nil, FlushMs, "1000", SourceStaticBroker},
		{map[string]string{"num.partitions": "3"}, nil, RetentionMs, "604800000", SourceDefault},
	}
	for i, c := range cases {
		b, err := NewBroker(c.static)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		r, err := b.Resolve(c.overrides)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if v, src, _ := r.Value(c.name); v != c.want || src != c.src {
			t.Errorf("case %d: %s = %s (%v), want %s (%v)", i, c.name, v, src, c.want, c.src)
		}
	}
	b, _ := NewBroker(map[string]string{"log.retention.hours": "1", "num.partitions": "3", "default.replication.factor": "2"})
	if r, _ := b.Resolve(nil); r.RetentionMs != 3600000 {
		t.Fatalf("RetentionMs = %d", r.RetentionMs)
	}
	if b.NumPartitions() != 3 || b.DefaultReplicationFactor() != 2 {
		t.Fatalf("partitions %d rf %d", b.NumPartitions(), b.DefaultReplicationFactor())
	}
}

func TestNewBrokerRejects(t *testing.T) {
	for static, sentinel := range map[string]error{
		"no.such.config": ErrUnknownConfig,
		"num.partitions": ErrInvalidValue, // "0"
	} {
		_, err := NewBroker(map[string]string{static: "0"})
		if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), static) {
			t.Errorf("%s: err = %v, want %v naming the key", static, err, sentinel)
		}
	}
}

func TestDescribeTopic(t *testing.T) {
	b, err := NewBroker(map[string]string{"log.retention.hours": "24"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Resolve(map[string]string{"cleanup.policy": "compact", "internal.segment.bytes": "4096"})
	if err != nil {
		t.Fatal(err)
	}
	all := r.Describe(nil, true, true)
	byName := map[string]Entry{}
	for _, e := range all {
		byName[e.Name] = e
	}
	if len(all) != len(TopicNames())+1 {
		t.Fatalf("got %d entries, want %d (all + the set internal one)", len(all), len(TopicNames())+1)
	}
	cp := byName["cleanup.policy"]
	if *cp.Value != "compact" || cp.Source != SourceDynamicTopicConfig || cp.Type != TypeList || cp.ReadOnly || cp.Doc == "" {
		t.Fatalf("cleanup.policy entry %+v", cp)
	}
	if len(cp.Synonyms) != 2 || cp.Synonyms[0].Source != SourceDynamicTopicConfig ||
		cp.Synonyms[1].Name != "log.cleanup.policy" || cp.Synonyms[1].Source != SourceDefault {
		t.Fatalf("cleanup.policy synonyms %+v", cp.Synonyms)
	}
	// Kafka's ConfigHelper lists the broker synonyms from the first one
	// (log.retention.ms) on: with only log.retention.hours set, none
	// (Kafka 4.4 describes retention.ms so: DEFAULT_CONFIG, synonyms={}).
	rm := byName["retention.ms"]
	if *rm.Value != "86400000" || rm.Source != SourceDefault || rm.Type != TypeLong || len(rm.Synonyms) != 0 {
		t.Fatalf("retention.ms entry %+v", rm)
	}
	if v, src, _ := r.Value("retention.ms"); v != "86400000" || src != SourceStaticBroker {
		t.Fatalf("retention.ms value %s from %s", v, src)
	}
	if e := byName["segment.bytes"]; !e.IsDefault() || *e.Value != "1073741824" {
		t.Fatalf("segment.bytes entry %+v", e)
	}
	if _, ok := byName["internal.segment.bytes"]; !ok {
		t.Fatal("set internal config not described")
	}

	some := r.Describe([]string{"retention.ms", "nope", "segment.ms"}, false, false)
	if len(some) != 2 || some[0].Name != "retention.ms" || some[1].Name != "segment.ms" ||
		some[0].Synonyms != nil || some[0].Doc != "" {
		t.Fatalf("named describe: %+v", some)
	}
	r0, _ := Resolve(nil)
	for _, e := range r0.Describe(nil, false, false) {
		if e.Name == InternalSegmentBytes {
			t.Fatal("unset internal config described")
		}
	}
}

func TestDescribeBroker(t *testing.T) {
	b, err := NewBroker(map[string]string{"num.partitions": "4", "node.id": "1"})
	if err != nil {
		t.Fatal(err)
	}
	all := b.Describe(nil, true, false)
	if len(all) != len(BrokerNames())-len(throttleDefs) {
		t.Fatalf("%d entries, want %d (the dynamic-only throttles only when set)", len(all), len(BrokerNames())-len(throttleDefs))
	}
	for _, e := range all {
		if e.ReadOnly == IsDynamic(e.Name) {
			t.Errorf("%s: read-only %v, dynamic %v", e.Name, e.ReadOnly, IsDynamic(e.Name))
		}
		switch e.Name {
		case "num.partitions":
			if *e.Value != "4" || e.Source != SourceStaticBroker || len(e.Synonyms) != 2 {
				t.Errorf("num.partitions %+v", e)
			}
		case "log.retention.ms":
			if e.Value != nil || e.Source != SourceDefault {
				t.Errorf("log.retention.ms should be null/default: %+v", e)
			}
		}
	}
	one := b.Describe([]string{"node.id"}, false, false)
	if len(one) != 1 || *one[0].Value != "1" || one[0].Source != SourceStaticBroker {
		t.Fatalf("node.id: %+v", one)
	}
}

func sp(s string) *string { return &s }

func TestApplyOps(t *testing.T) {
	cases := []struct {
		name    string
		current map[string]string
		ops     []Op
		want    map[string]string
		err     error
	}{
		{"set", nil, []Op{{OpSet, "retention.ms", sp("10")}}, map[string]string{"retention.ms": "10"}, nil},
		{"set replaces", map[string]string{"retention.ms": "5"}, []Op{{OpSet, "retention.ms", sp("10")}}, map[string]string{"retention.ms": "10"}, nil},
		{"delete", map[string]string{"retention.ms": "5", "segment.ms": "9"}, []Op{{OpDelete, "retention.ms", nil}}, map[string]string{"segment.ms": "9"}, nil},
		{"delete absent", nil, []Op{{OpDelete, "retention.ms", nil}}, map[string]string{}, nil},
		{"append to default", nil, []Op{{OpAppend, "cleanup.policy", sp("compact")}}, map[string]string{"cleanup.policy": "delete,compact"}, nil},
		{"append present", map[string]string{"cleanup.policy": "compact"}, []Op{{OpAppend, "cleanup.policy", sp("compact")}}, map[string]string{"cleanup.policy": "compact"}, nil},
		{"subtract", map[string]string{"cleanup.policy": "compact,delete"}, []Op{{OpSubtract, "cleanup.policy", sp("delete")}}, map[string]string{"cleanup.policy": "compact"}, nil},
		{"subtract all", nil, []Op{{OpSubtract, "cleanup.policy", sp("delete")}}, map[string]string{"cleanup.policy": ""}, nil},
		{"append non-list", nil, []Op{{OpAppend, "retention.ms", sp("1")}}, nil, ErrInvalidRequest},
		{"duplicate key", nil, []Op{{OpSet, "retention.ms", sp("1")}, {OpDelete, "retention.ms", nil}}, nil, ErrInvalidRequest},
		{"unknown key", nil, []Op{{OpSet, "retention", sp("1")}}, nil, ErrUnknownConfig},
		{"null set", nil, []Op{{OpSet, "retention.ms", nil}}, nil, ErrInvalidRequest},
		{"bad op", nil, []Op{{OpType(9), "retention.ms", sp("1")}}, nil, ErrInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := strconv.Itoa(len(c.current))
			got, err := Defaults().ApplyOps(c.current, c.ops)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
			if strconv.Itoa(len(c.current)) != before {
				t.Fatal("current modified")
			}
		})
	}
}

func TestMsDurationSaturates(t *testing.T) {
	if d := msDuration(math.MaxInt64); d != math.MaxInt64 {
		t.Fatalf("msDuration(MaxInt64) = %d", d)
	}
	if d := msDuration(1500); d.Milliseconds() != 1500 {
		t.Fatalf("msDuration(1500) = %v", d)
	}
	if d := msDuration(-1); d.Milliseconds() != -1 {
		t.Fatalf("msDuration(-1) = %v", d)
	}
}
