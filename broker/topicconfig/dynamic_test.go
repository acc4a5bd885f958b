package topicconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// describeLine formats an entry as kafka-configs --describe prints it.
func describeLine(e Entry) string {
	var syns []string
	for _, s := range e.Synonyms {
		v := "null"
		if s.Value != nil {
			v = *s.Value
		}
		syns = append(syns, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, v))
	}
	v := "null"
	if e.Value != nil {
		v = *e.Value
	}
	return fmt.Sprintf("%s=%s sensitive=%v synonyms={%s}", e.Name, v, e.Sensitive, strings.Join(syns, ", "))
}

// The expected lines are Kafka 4.4's kafka-configs output for the same
// settings (static log.retention.hours=100, these dynamic configs).
func TestDynamicPrecedenceAndDescribe(t *testing.T) {
	b, err := NewBroker(map[string]string{"log.retention.hours": "100"})
	if err != nil {
		t.Fatal(err)
	}
	var seen [][]string
	cancel := b.OnChange(func(names []string) { seen = append(seen, names) })
	r0, _ := b.Resolve(nil) // resolved before the change: keeps its values
	b.SetDynamic(
		map[string]string{"log.segment.bytes": "2097152", "leader.replication.throttled.rate": "1000", "log.retention.ms": "5000", "foo.bar": "1"},
		map[string]string{"log.retention.ms": "1000", "log.cleaner.threads": "2"},
	)
	if want := []string{"foo.bar", "leader.replication.throttled.rate", "log.cleaner.threads", "log.retention.ms", "log.segment.bytes"}; len(seen) != 1 || !slices.Equal(seen[0], want) {
		t.Fatalf("changes %v, want [%v]", seen, want)
	}
	if v, src, _ := b.Value("log.retention.ms"); v != "5000" || src != SourceDynamicBroker {
		t.Fatalf("log.retention.ms %s %s", v, src)
	}
	if v, _ := b.Get("follower.replication.throttled.rate"); v != "9223372036854775807" {
		t.Fatalf("unset throttle %q", v)
	}
	if v, _, _ := r0.Value("retention.ms"); v != "360000000" {
		t.Fatalf("old resolution changed: retention.ms %s", v)
	}
	r, err := b.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.RetentionMs != 5000 || r.SegmentBytes != 2097152 {
		t.Fatalf("topic without overrides: retention %d segment %d", r.RetentionMs, r.SegmentBytes)
	}
	want := map[string]string{
		"leader.replication.throttled.rate": "leader.replication.throttled.rate=1000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000}",
		"log.retention.ms":                  "log.retention.ms=5000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=5000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000, STATIC_BROKER_CONFIG:log.retention.hours=100, DEFAULT_CONFIG:log.retention.hours=168}",
		"log.segment.bytes":                 "log.segment.bytes=2097152 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.segment.bytes=2097152, DEFAULT_CONFIG:log.segment.bytes=1073741824}",
		"log.cleaner.threads":               "log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}",
		"log.retention.hours":               "log.retention.hours=100 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.hours=100, DEFAULT_CONFIG:log.retention.hours=168}",
		"log.retention.minutes":             "log.retention.minutes=null sensitive=false synonyms={}",
		"foo.bar":                           "foo.bar=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:foo.bar=null}",
	}
	got := map[string]string{}
	for _, e := range b.Describe(nil, true, false) {
		got[e.Name] = describeLine(e)
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s:\n got %s\nwant %s", n, got[n], w)
		}
	}
	if _, ok := got["follower.replication.throttled.rate"]; ok {
		t.Error("unset dynamic-only throttle described")
	}
	var def []string
	for _, e := range b.DescribeDefault(nil, true, false) {
		def = append(def, describeLine(e))
	}
	if w := []string{
		"log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}",
		"log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000}",
	}; !slices.Equal(def, w) {
		t.Errorf("default resource:\n got %q\nwant %q", def, w)
	}
	var rm Entry
	for _, e := range r.Describe([]string{"retention.ms"}, true, false) {
		rm = e
	}
	if w := "retention.ms=5000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=5000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000, STATIC_BROKER_CONFIG:log.retention.hours=100, DEFAULT_CONFIG:log.retention.hours=168}"; describeLine(rm) != w || rm.Source != SourceDynamicBroker {
		t.Errorf("topic retention.ms:\n got %s (%s)\nwant %s", describeLine(rm), rm.Source, w)
	}

	// Back to no dynamic configs: the static values again.
	cancel()
	b.SetDynamic(nil, nil)
	if v, src, _ := b.Value("log.retention.ms"); v != "" || src != SourceUnknown {
		t.Fatalf("after removal: log.retention.ms %q %s", v, src)
	}
	if len(seen) != 1 {
		t.Fatalf("cancelled watcher ran: %v", seen)
	}
	// Defaults() is shared: never live.
	if Defaults().SetDynamic(map[string]string{"log.retention.ms": "1"}, nil) != nil {
		t.Fatal("Defaults() took dynamic configs")
	}
}

// Kafka 4.4's answers (all INVALID_REQUEST).
func TestValidateDynamic(t *testing.T) {
	for _, c := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"log.retention.hours": "1"}, "Cannot update these configs dynamically: [log.retention.hours]"},
		{map[string]string{"num.partitions": "3", "log.retention.ms": "1"}, "Cannot update these configs dynamically: [num.partitions]"},
		{map[string]string{"advertised.listeners": "PLAINTEXT://x:1"}, "Cannot update these configs dynamically: [advertised.listeners]"},
		{map[string]string{"log.retention.ms": "abc"}, "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"},
		{map[string]string{"log.segment.bytes": "10"}, "Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576"},
	} {
		err := ValidateDynamic(c.cfg, true)
		if !errors.Is(err, ErrInvalidRequest) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%v: %v, want ErrInvalidRequest ending %q", c.cfg, err, c.want)
		}
	}
	for _, ok := range []map[string]string{
		{"log.retention.ms": "1000", "log.cleaner.threads": "2", "foo.bar": "1"},
		{"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"},
		{},
	} {
		if err := ValidateDynamic(ok, false); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}

// A change that would leave topics unresolvable is refused.
func TestValidateChangeCrossConfig(t *testing.T) {
	b, err := NewBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	b.SetDynamic(nil, map[string]string{"log.cleaner.max.compaction.lag.ms": "5"})
	err = b.ValidateChange(map[string]string{"log.cleaner.min.compaction.lag.ms": "10"}, true)
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "min.compaction.lag.ms") {
		t.Fatalf("min > max compaction lag: %v", err)
	}
	if err := b.ValidateChange(map[string]string{"log.cleaner.min.compaction.lag.ms": "3"}, true); err != nil {
		t.Fatal(err)
	}
}
