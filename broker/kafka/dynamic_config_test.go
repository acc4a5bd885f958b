package kafka

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dynamic broker configs through the Kafka API: set for the cluster
// default and for this broker, applied at once to topics without an
// override, described with Kafka's sources and synonyms; bad changes
// refused as a whole with Kafka's errors.
func TestAdminDynamicBrokerConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, map[string]string{"log.retention.hours": "100"}))
	adm, ctx := adminFor(t, b)
	self := strconv.Itoa(int(b.srv.cfg.NodeID))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("60000")}, "overridden"); err != nil {
		t.Fatal(err)
	}
	wantRetention := func(topic string, want time.Duration) {
		t.Helper()
		for i, got := range retentionOf(t, b, topic) {
			if got != want {
				t.Fatalf("%s partition %d: retention %v, want %v", topic, i, got, want)
			}
		}
	}
	wantRetention("plain", 100*time.Hour)
	alter := func(what string, cfgs []kadm.AlterConfig, brokers ...int32) {
		t.Helper()
		resp, err := adm.AlterBrokerConfigs(ctx, cfgs, brokers...)
		if err != nil || resp[0].Err != nil {
			t.Fatalf("%s: %v %+v", what, err, resp)
		}
	}
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
	}

	// The cluster default applies to topics without an override, live.
	alter("default", []kadm.AlterConfig{set("log.retention.ms", "1000"), set("log.cleaner.threads", "2")})
	wantRetention("plain", time.Second)
	wantRetention("overridden", time.Minute)
	// This broker's own value beats the default.
	alter("per broker", []kadm.AlterConfig{set("log.retention.ms", "5000"), set("log.segment.bytes", "2097152"), set("leader.replication.throttled.rate", "1000")}, b.srv.cfg.NodeID)
	wantRetention("plain", 5*time.Second)
	if got := b.meta.Image().BrokerConfigs(self); len(got) != 3 || got["log.segment.bytes"] != "2097152" {
		t.Fatalf("stored per-broker configs %v", got)
	}
	if v, _ := b.srv.cfg.BrokerConfig.Get("leader.replication.throttled.rate"); v != "1000" {
		t.Fatalf("throttle %q", v)
	}

	// Described as Kafka describes them.
	bcs, err := adm.DescribeBrokerConfigs(ctx, b.srv.cfg.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	bc := configsByName(t, bcs, self)
	line := func(c kadm.Config) string {
		var syns []string
		for _, s := range c.Synonyms {
			v := "null"
			if s.Value != nil {
				v = *s.Value
			}
			syns = append(syns, s.Source.String()+":"+s.Key+"="+v)
		}
		return c.Key + "=" + c.MaybeValue() + " " + c.Source.String() + " {" + strings.Join(syns, ", ") + "}"
	}
	for k, want := range map[string]string{
		"log.retention.ms":    "log.retention.ms=5000 DYNAMIC_BROKER_CONFIG {DYNAMIC_BROKER_CONFIG:log.retention.ms=5000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000, STATIC_BROKER_CONFIG:log.retention.hours=100, DEFAULT_CONFIG:log.retention.hours=168}",
		"log.segment.bytes":   "log.segment.bytes=2097152 DYNAMIC_BROKER_CONFIG {DYNAMIC_BROKER_CONFIG:log.segment.bytes=2097152, DEFAULT_CONFIG:log.segment.bytes=1073741824}",
		"log.cleaner.threads": "log.cleaner.threads=2 DYNAMIC_DEFAULT_BROKER_CONFIG {DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}",
	} {
		if got := line(bc[k]); got != want {
			t.Errorf("describe %s:\n got %s\nwant %s", k, got, want)
		}
	}
	dcs, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dc := configsByName(t, dcs, "")
	if len(dc) != 2 || line(dc["log.retention.ms"]) != "log.retention.ms=1000 DYNAMIC_DEFAULT_BROKER_CONFIG {DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000}" {
		t.Fatalf("cluster default described: %v", dc)
	}
	tcs, err := adm.DescribeTopicConfigs(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if c := configsByName(t, tcs, "plain")["retention.ms"]; c.MaybeValue() != "5000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("topic retention.ms: %s", line(c))
	}

	// Bad input: Kafka's errors, and nothing of the request applied.
	before := maps.Clone(b.meta.Image().BrokerConfigs(self))
	for _, c := range []struct {
		cfgs    []kadm.AlterConfig
		brokers []int32
		want    *kerr.Error
		msg     string
	}{
		{[]kadm.AlterConfig{set("log.segment.bytes", "4194304"), set("log.retention.hours", "1")}, []int32{b.srv.cfg.NodeID}, kerr.InvalidRequest, "Cannot update these configs dynamically: [log.retention.hours]"},
		{[]kadm.AlterConfig{set("num.partitions", "3")}, []int32{b.srv.cfg.NodeID}, kerr.InvalidRequest, "Cannot update these configs dynamically: [num.partitions]"},
		{[]kadm.AlterConfig{set("log.retention.ms", "abc")}, []int32{b.srv.cfg.NodeID}, kerr.InvalidRequest, "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"},
		{[]kadm.AlterConfig{set("log.segment.bytes", "10"), set("log.retention.ms", "7")}, []int32{b.srv.cfg.NodeID}, kerr.InvalidRequest, "Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576"},
		{[]kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "log.retention.ms", Value: kadm.StringPtr("1")}}, []int32{b.srv.cfg.NodeID}, kerr.InvalidConfig, "Config value append is not allowed for config key: log.retention.ms"},
		{[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms"}}, []int32{b.srv.cfg.NodeID}, kerr.InvalidRequest, "Null value not supported for : log.retention.ms"},
	} {
		resp, err := adm.AlterBrokerConfigs(ctx, c.cfgs, c.brokers...)
		if err != nil {
			t.Fatal(err)
		}
		if resp[0].Err != c.want || resp[0].ErrMessage != c.msg {
			t.Errorf("%v: %v %q, want %v %q", c.cfgs, resp[0].Err, resp[0].ErrMessage, c.want, c.msg)
		}
	}
	if got := b.meta.Image().BrokerConfigs(self); !maps.Equal(got, before) {
		t.Fatalf("a refused change was applied: %v, was %v", got, before)
	}
	// Another broker's resource, raw (kadm would route it to broker 99).
	rc := dialRaw(t, b.addr)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "99"
	req.Resources = append(req.Resources, rr)
	if r := rc.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != "Unexpected broker id, expected "+self+", but received 99" {
		t.Fatalf("other broker: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	// validate_only stores nothing.
	if resp, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{set("log.retention.ms", "1")}); err != nil || resp[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, resp)
	}
	if b.meta.Image().BrokerConfigs("")["log.retention.ms"] != "1000" {
		t.Fatal("validate_only stored its change")
	}

	// The legacy AlterConfigs replaces the whole set; deleting returns to
	// the static value.
	if resp, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{set("log.segment.bytes", "3145728")}, b.srv.cfg.NodeID); err != nil || resp[0].Err != nil {
		t.Fatalf("legacy alter: %v %+v", err, resp)
	}
	if got := b.meta.Image().BrokerConfigs(self); len(got) != 1 || got["log.segment.bytes"] != "3145728" {
		t.Fatalf("after the legacy alter: %v", got)
	}
	wantRetention("plain", time.Second) // the default again
	alter("delete default", []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "log.retention.ms"}, {Op: kadm.DeleteConfig, Name: "log.cleaner.threads"}})
	wantRetention("plain", 100*time.Hour)
	if got := b.meta.Image().BrokerConfigs(""); got != nil {
		t.Fatalf("cluster default after deleting all: %v", got)
	}
}
