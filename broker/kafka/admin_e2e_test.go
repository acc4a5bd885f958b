package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/topicconfig"
)

// End-to-end tests of the admin APIs (19, 20, 21, 32, 33, 37, 44, 60)
// through franz-go's kadm against a real in-process broker.

func adminFor(t *testing.T, b *testBroker) (*kadm.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return kadm.NewClient(b.client()), ctx
}

func withBrokerConfig(t *testing.T, static map[string]string) brokerOpt {
	bc, err := topicconfig.NewBroker(static)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.BrokerConfig = bc }
}

func errIs(t *testing.T, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

func TestAdminCreateTopics(t *testing.T) {
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, map[string]string{"num.partitions": "3", "log.retention.hours": "2"}))
	adm, ctx := adminFor(t, b)

	resp, err := adm.CreateTopic(ctx, 4, 1, map[string]*string{
		"retention.ms":   kadm.StringPtr("60000"),
		"cleanup.policy": kadm.StringPtr("compact,delete"),
	}, "orders")
	if err != nil {
		t.Fatalf("create: %v (%s)", err, resp.ErrMessage)
	}
	if resp.NumPartitions != 4 || resp.ReplicationFactor != 1 || resp.ID == (kadm.TopicID{}) {
		t.Fatalf("create response %+v", resp)
	}
	if c := resp.Configs["retention.ms"]; c.MaybeValue() != "60000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms in the response: %+v", c)
	}
	if c := resp.Configs["segment.ms"]; c.MaybeValue() != "604800000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.ms in the response: %+v", c)
	}
	// The partitions are open, with the configs applied to their logs.
	for p := int32(0); p < 4; p++ {
		_, part := b.srv.parts.lookup("orders", p)
		if part == nil || part.log == nil {
			t.Fatalf("partition %d not open after CreateTopics returned", p)
		}
		if c := part.log.Config(); c.RetentionMs != time.Minute || !c.Compact || !c.Delete {
			t.Fatalf("partition %d log config %+v", p, c)
		}
	}
	// Defaults: -1/-1 take num.partitions and default.replication.factor;
	// retention comes from the broker's log.retention.hours.
	d, err := adm.CreateTopic(ctx, -1, -1, nil, "defaults")
	if err != nil || d.NumPartitions != 3 || d.ReplicationFactor != 1 {
		t.Fatalf("defaults: %+v %v", d, err)
	}
	// Kafka reports the source of the first broker synonym
	// (log.retention.ms) only: DEFAULT_CONFIG here, value from the hours.
	if c := d.Configs["retention.ms"]; c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("defaults retention.ms %+v", c)
	}

	cases := []struct {
		topic      string
		partitions int32
		rf         int16
		configs    map[string]*string
		want       *kerr.Error
		inMsg      string
	}{
		{"orders", 1, 1, nil, kerr.TopicAlreadyExists, "orders"},
		{"bad/name", 1, 1, nil, kerr.InvalidTopicException, "bad/name"},
		{"orders.v2", 1, 1, nil, nil, ""},
		{"orders_v2", 1, 1, nil, kerr.InvalidTopicException, "collides"},
		{"zero", 0, 1, nil, kerr.InvalidPartitions, "larger than 0"},
		{"rf2", 1, 2, nil, kerr.InvalidReplicationFactor, "only 1 broker"},
		{"rf0", 1, 0, nil, kerr.InvalidReplicationFactor, "larger than 0"},
		{"unknowncfg", 1, 1, map[string]*string{"retention.mss": kadm.StringPtr("1")}, kerr.InvalidConfig, "retention.mss"},
		{"badvalue", 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("-5")}, kerr.InvalidConfig, "at least -1"},
		{"badpolicy", 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("purge")}, kerr.InvalidConfig, "purge"},
		{"smallseg", 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1000")}, kerr.InvalidConfig, "segment.bytes"},
		{"nullcfg", 1, 1, map[string]*string{"retention.ms": nil}, kerr.InvalidConfig, "null"},
	}
	for _, c := range cases {
		r, err := adm.CreateTopic(ctx, c.partitions, c.rf, c.configs, c.topic)
		if c.want == nil {
			if err != nil {
				t.Errorf("%s: %v %s", c.topic, err, r.ErrMessage)
			}
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(r.ErrMessage, c.inMsg) {
			t.Errorf("%s: err %v message %q, want %v mentioning %q", c.topic, err, r.ErrMessage, c.want, c.inMsg)
		}
		if c.want != kerr.TopicAlreadyExists {
			if _, ok := b.meta.Image().Topic(c.topic); ok {
				t.Errorf("%s: created despite %v", c.topic, c.want)
			}
		}
	}

	// validate_only creates nothing.
	vr, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "validated")
	if err != nil || vr["validated"].Err != nil || vr["validated"].NumPartitions != 2 {
		t.Fatalf("validate only: %+v %v", vr, err)
	}
	if _, ok := b.meta.Image().Topic("validated"); ok {
		t.Fatal("validate_only created the topic")
	}
}

func TestAdminCreateTopicsRawVersions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	rc := dialRaw(t, b.addr)
	topic := func(name string, parts int32, rf int16) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, rf
		return rt
	}
	// v0: no error messages, no defaults.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 0
	req.TimeoutMillis = 5000
	req.Topics = []kmsg.CreateTopicsRequestTopic{topic("v0", 2, 1)}
	resp := rc.roundTrip(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("v0: %+v", resp.Topics)
	}
	// A name twice in one request fails both; the others still succeed.
	req = kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.Topics = []kmsg.CreateTopicsRequestTopic{topic("dup", 1, 1), topic("ok", 1, 1), topic("dup", 1, 1)}
	resp = rc.roundTrip(req).(*kmsg.CreateTopicsResponse)
	for _, st := range resp.Topics {
		want := int16(0)
		if st.Topic == "dup" {
			want = kerr.InvalidRequest.Code
		}
		if st.ErrorCode != want {
			t.Fatalf("%s: code %d, want %d", st.Topic, st.ErrorCode, want)
		}
	}
	if _, ok := b.meta.Image().Topic("dup"); ok {
		t.Fatal("duplicate topic created")
	}
	// Explicit assignment: accepted when every broker it names exists,
	// once per partition.
	assign := func(name string, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
		rt := topic(name, -1, -1)
		for p, rs := range replicas {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), rs
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		return rt
	}
	mixed := assign("mixed", []int32{0})
	mixed.NumPartitions = 1
	req.Topics = []kmsg.CreateTopicsRequestTopic{
		assign("manual", []int32{0}, []int32{0}),
		assign("nobroker", []int32{7}),
		assign("twice", []int32{0, 0}),
		mixed,
	}
	resp = rc.roundTrip(req).(*kmsg.CreateTopicsResponse)
	want := map[string]int16{"manual": 0, "nobroker": kerr.InvalidReplicaAssignment.Code,
		"twice": kerr.InvalidReplicaAssignment.Code, "mixed": kerr.InvalidRequest.Code}
	for _, st := range resp.Topics {
		if st.ErrorCode != want[st.Topic] {
			t.Errorf("%s: code %d (%v), want %d", st.Topic, st.ErrorCode, unptr(st.ErrorMessage), want[st.Topic])
		}
	}
	if tp, ok := b.meta.Image().Topic("manual"); !ok || len(tp.Partitions) != 2 {
		t.Fatalf("manual assignment: %+v", tp)
	}
}

func unptr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestAdminDeleteTopics(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm, ctx := adminFor(t, b)
	for _, name := range []string{"gone", "kept"} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	cl := b.client(kgo.DefaultProduceTopic("gone"))
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("r"+strconv.Itoa(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(b.dir, "gone-0")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("partition directory before delete: %v", err)
	}
	resp, err := adm.DeleteTopics(ctx, "gone", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if r := resp["gone"]; r.Err != nil {
		t.Fatalf("delete gone: %v %s", r.Err, r.ErrMessage)
	}
	errIs(t, "delete missing", resp["missing"].Err, kerr.UnknownTopicOrPartition)
	if _, ok := b.meta.Image().Topic("gone"); ok {
		t.Fatal("topic still in metadata")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("partition directory after delete: %v", err)
	}
	if ts, _ := b.srv.parts.lookup("gone", 0); ts != nil {
		t.Fatal("partition still hosted")
	}
	// A new topic of the same name starts empty.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "gone"); err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("gone", 0); o.Offset != 0 {
		t.Fatalf("recreated topic ends at %d", o.Offset)
	}

	// v6 by topic id, unknown id, name and id together.
	kept, _ := b.meta.Image().Topic("kept")
	rc := dialRaw(t, b.addr)
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = kept.ID
	unknownID := kmsg.NewDeleteTopicsRequestTopic()
	unknownID.TopicID = [16]byte{1, 2, 3}
	both := kmsg.NewDeleteTopicsRequestTopic()
	both.Topic, both.TopicID = kmsg.StringPtr("x"), [16]byte{4}
	req.Topics = []kmsg.DeleteTopicsRequestTopic{byID, unknownID, both}
	dr := rc.roundTrip(req).(*kmsg.DeleteTopicsResponse)
	if len(dr.Topics) != 3 || dr.Topics[0].ErrorCode != 0 || unptr(dr.Topics[0].Topic) != "kept" ||
		dr.Topics[1].ErrorCode != kerr.UnknownTopicID.Code || dr.Topics[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v6 delete: %+v", dr.Topics)
	}
	if _, ok := b.meta.Image().Topic("kept"); ok {
		t.Fatal("delete by id did not delete")
	}
}

func TestAdminDeleteTopicsDisabled(t *testing.T) {
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, map[string]string{"delete.topic.enable": "false"}))
	adm, ctx := adminFor(t, b)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "stays"); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.DeleteTopic(ctx, "stays")
	errIs(t, "delete with delete.topic.enable=false", err, kerr.TopicDeletionDisabled)
	if _, ok := b.meta.Image().Topic("stays"); !ok {
		t.Fatalf("topic deleted: %+v", resp)
	}
}

func TestAdminCreatePartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm, ctx := adminFor(t, b)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	if r, err := adm.ValidateCreatePartitions(ctx, 3, "grow"); err != nil || r["grow"].Err != nil {
		t.Fatalf("validate: %+v %v", r, err)
	}
	if tp, _ := b.meta.Image().Topic("grow"); len(tp.Partitions) != 2 {
		t.Fatal("validate_only added partitions")
	}
	r, err := adm.CreatePartitions(ctx, 3, "grow", "nosuch")
	if err != nil {
		t.Fatal(err)
	}
	if r["grow"].Err != nil {
		t.Fatalf("add 3: %v %s", r["grow"].Err, r["grow"].ErrMessage)
	}
	errIs(t, "unknown topic", r["nosuch"].Err, kerr.UnknownTopicOrPartition)
	// The new partitions take records at once.
	cl := b.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := &kgo.Record{Topic: "grow", Partition: 4, Value: []byte("p4")}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("produce to new partition 4: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup("grow", 4); !ok || o.Offset != 1 {
		t.Fatalf("partition 4 end offset %+v", o)
	}
	for _, set := range []int{5, 3} {
		r, err := adm.UpdatePartitions(ctx, set, "grow")
		if err != nil {
			t.Fatal(err)
		}
		errIs(t, fmt.Sprintf("set to %d", set), r["grow"].Err, kerr.InvalidPartitions)
	}
	// A wrong explicit assignment is refused.
	rc := dialRaw(t, b.addr)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "grow", 6
	a := kmsg.NewCreatePartitionsRequestTopicAssignment()
	a.Replicas = []int32{9}
	rt.Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{a}
	req.Topics = []kmsg.CreatePartitionsRequestTopic{rt}
	cr := rc.roundTrip(req).(*kmsg.CreatePartitionsResponse)
	if cr.Topics[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("bad assignment: %+v", cr.Topics[0])
	}
}

func TestAdminDeleteRecords(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm, ctx := adminFor(t, b)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("1048576")}, "trim"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "compacted"); err != nil {
		t.Fatal(err)
	}
	cl := b.client(kgo.DefaultProduceTopic("trim"))
	for i := 0; i < 100; i++ {
		cl.Produce(ctx, kgo.StringRecord(fmt.Sprintf("r%03d", i)), nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var offs kadm.Offsets
	offs.AddOffset("trim", 0, 40, -1)
	offs.AddOffset("compacted", 0, 0, -1)
	resp, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup("trim", 0); r.Err != nil || r.LowWatermark != 40 {
		t.Fatalf("delete before 40: %+v", r)
	}
	rc, _ := resp.Lookup("compacted", 0)
	errIs(t, "compact-only topic", rc.Err, kerr.PolicyViolation)

	starts, err := adm.ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("trim", 0); o.Offset != 40 {
		t.Fatalf("start offset after delete: %d", o.Offset)
	}
	// Consuming from the start begins at the new log start.
	cons := b.client(kgo.ConsumeTopics("trim"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 40 || string(recs[0].Value) != "r040" {
		t.Fatalf("first record after delete: %+v", recs)
	}

	// Above the high watermark: OFFSET_OUT_OF_RANGE; -1: up to the HW.
	offs = nil
	offs.AddOffset("trim", 0, 101, -1)
	resp, err = adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := resp.Lookup("trim", 0)
	errIs(t, "above the high watermark", r.Err, kerr.OffsetOutOfRange)
	offs = nil
	offs.AddOffset("trim", 0, -1, -1)
	resp, err = adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup("trim", 0); r.Err != nil || r.LowWatermark != 100 {
		t.Fatalf("delete up to the high watermark: %+v", r)
	}
}

func configsByName(t *testing.T, rcs kadm.ResourceConfigs, name string) map[string]kadm.Config {
	t.Helper()
	rc, err := rcs.On(name, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v %s", name, err, rc.Err, rc.ErrMessage)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

func TestAdminDescribeConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, map[string]string{"log.retention.hours": "24", "num.partitions": "2"}))
	adm, ctx := adminFor(t, b)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000000")}, "described"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "described", "nosuch")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := configsByName(t, rcs, "described")
	if len(cfgs) != len(topicconfig.TopicNames()) {
		t.Fatalf("%d topic configs described, want %d", len(cfgs), len(topicconfig.TopicNames()))
	}
	mm := cfgs["max.message.bytes"]
	if mm.MaybeValue() != "2000000" || mm.Source != kmsg.ConfigSourceDynamicTopicConfig ||
		len(mm.Synonyms) != 2 || mm.Synonyms[1].Key != "message.max.bytes" || mm.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("max.message.bytes: %+v", mm)
	}
	rm := cfgs["retention.ms"]
	if rm.MaybeValue() != "86400000" || rm.Source != kmsg.ConfigSourceDefaultConfig { // as Kafka: see TestDescribeTopic
		t.Fatalf("retention.ms: %+v", rm)
	}
	if rc, _ := rcs.On("nosuch", nil); !errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %+v", rc)
	}

	bcs, err := adm.DescribeBrokerConfigs(ctx, b.srv.cfg.NodeID)
	if err != nil {
		t.Fatal(err)
	}
	bc := configsByName(t, bcs, strconv.Itoa(int(b.srv.cfg.NodeID)))
	if c := bc["num.partitions"]; c.MaybeValue() != "2" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("num.partitions: %+v", c)
	}
	if c := bc["log.segment.bytes"]; c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("log.segment.bytes: %+v", c)
	}
	if c := bc["node.id"]; c.MaybeValue() != strconv.Itoa(int(b.srv.cfg.NodeID)) {
		t.Fatalf("node.id: %+v", c)
	}
	if c := bc["listeners"]; !strings.Contains(c.MaybeValue(), b.addr) {
		t.Fatalf("listeners: %+v", c)
	}

	// Raw: v0 (is_default, no synonyms), v4 with documentation and config
	// types, named configs only, a wrong broker id.
	rc := dialRaw(t, b.addr)
	res := func(typ kmsg.ConfigResourceType, name string, keys ...string) kmsg.DescribeConfigsRequestResource {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, keys
		return r
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 0
	req.Resources = []kmsg.DescribeConfigsRequestResource{res(kmsg.ConfigResourceTypeTopic, "described", "segment.ms", "max.message.bytes")}
	dr := rc.roundTrip(req).(*kmsg.DescribeConfigsResponse)
	got := dr.Resources[0].Configs
	if len(got) != 2 || got[0].Name != "segment.ms" || !got[0].IsDefault || got[1].IsDefault {
		t.Fatalf("v0: %+v", got)
	}
	req.Version = 4
	req.IncludeDocumentation, req.IncludeSynonyms = true, true
	req.Resources = []kmsg.DescribeConfigsRequestResource{
		res(kmsg.ConfigResourceTypeTopic, "described", "cleanup.policy", "not.a.config"),
		res(kmsg.ConfigResourceTypeBroker, "99"),
		res(kmsg.ConfigResourceTypeBrokerLogger, "0"),
		res(kmsg.ConfigResourceTypeBroker, ""),
	}
	dr = rc.roundTrip(req).(*kmsg.DescribeConfigsResponse)
	if c := dr.Resources[0].Configs; len(c) != 1 || c[0].ConfigType != kmsg.ConfigTypeList ||
		c[0].Documentation == nil || *c[0].Documentation == "" {
		t.Fatalf("v4 topic: %+v", c)
	}
	if dr.Resources[1].ErrorCode != kerr.InvalidRequest.Code || dr.Resources[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("wrong broker / logger: %+v %+v", dr.Resources[1], dr.Resources[2])
	}
	if dr.Resources[3].ErrorCode != 0 || len(dr.Resources[3].Configs) != 0 {
		t.Fatalf("cluster default broker resource: %+v", dr.Resources[3])
	}
}

// logConfigsOf returns each partition's log config of topic.
func retentionOf(t *testing.T, b *testBroker, topic string) []time.Duration {
	t.Helper()
	ts, _ := b.srv.parts.lookup(topic, 0)
	if ts == nil {
		t.Fatalf("topic %s not hosted", topic)
	}
	var out []time.Duration
	for _, p := range ts.parts {
		out = append(out, p.log.Config().RetentionMs)
	}
	return out
}

func TestAdminIncrementalAlterConfigs(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm, ctx := adminFor(t, b)
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"segment.ms": kadm.StringPtr("100000")}, "alt"); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, "alt")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	tp, _ := b.meta.Image().Topic("alt")
	if tp.Configs["retention.ms"] != "3600000" || tp.Configs["cleanup.policy"] != "delete,compact" || tp.Configs["segment.ms"] != "100000" {
		t.Fatalf("stored overrides %v", tp.Configs)
	}
	// Every partition's log runs with the new config.
	for i, r := range retentionOf(t, b, "alt") {
		if r != time.Hour {
			t.Fatalf("partition %d retention %v after alter", i, r)
		}
	}
	ts, _ := b.srv.parts.lookup("alt", 0)
	for _, p := range ts.parts {
		if c := p.log.Config(); !c.Compact || !c.Delete {
			t.Fatalf("partition %d cleanup after APPEND: %+v", p.index, c)
		}
	}

	// DELETE returns to the default; SUBTRACT removes a list item.
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
		{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: kadm.StringPtr("delete")},
	}, "alt")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter 2: %v %+v", err, resp)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, "alt")
	if err != nil {
		t.Fatal(err)
	}
	c := configsByName(t, cfgs, "alt")
	if v := c["retention.ms"]; v.MaybeValue() != "604800000" || v.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("retention.ms after DELETE: %+v", v)
	}
	if v := c["cleanup.policy"]; v.MaybeValue() != "compact" {
		t.Fatalf("cleanup.policy after SUBTRACT: %+v", v)
	}
	for i, r := range retentionOf(t, b, "alt") {
		if r != 7*24*time.Hour {
			t.Fatalf("partition %d retention %v after DELETE", i, r)
		}
	}

	// Errors, and validate_only changes nothing.
	bad := []struct {
		op   kadm.AlterConfig
		want *kerr.Error
		msg  string
	}{
		{kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("soon")}, kerr.InvalidConfig, "retention.ms"},
		{kadm.AlterConfig{Op: kadm.SetConfig, Name: "no.such.key", Value: kadm.StringPtr("1")}, kerr.InvalidConfig, "no.such.key"},
		{kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}, kerr.InvalidRequest, "LIST"},
		{kadm.AlterConfig{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: kadm.StringPtr("10")}, nil, ""},
		{kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.compaction.lag.ms", Value: kadm.StringPtr("5")}, kerr.InvalidConfig, "conflict"},
	}
	for _, c := range bad {
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{c.op}, "alt")
		if err != nil {
			t.Fatal(err)
		}
		if c.want == nil {
			if resp[0].Err != nil {
				t.Fatalf("%s: %v", c.op.Name, resp[0].Err)
			}
			continue
		}
		if !errors.Is(resp[0].Err, c.want) || !strings.Contains(resp[0].ErrMessage, c.msg) {
			t.Errorf("%s: %v %q, want %v mentioning %q", c.op.Name, resp[0].Err, resp[0].ErrMessage, c.want, c.msg)
		}
	}
	resp, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "alt")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("validate only: %v %+v", err, resp)
	}
	if tp, _ := b.meta.Image().Topic("alt"); tp.Configs["retention.ms"] != "" {
		t.Fatalf("validate_only stored %v", tp.Configs)
	}
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "nosuch")
	if err != nil {
		t.Fatal(err)
	}
	errIs(t, "unknown topic", resp[0].Err, kerr.UnknownTopicOrPartition)
}

func TestAdminAlterConfigsReplacesAll(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	adm, ctx := adminFor(t, b)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{
		"segment.ms":   kadm.StringPtr("100000"),
		"retention.ms": kadm.StringPtr("5000"),
	}, "legacy"); err != nil {
		t.Fatal(err)
	}
	// The legacy AlterConfigs sets exactly the given configs: segment.ms
	// and retention.ms go back to their defaults.
	resp, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("4096")}}, "legacy")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter state: %v %+v", err, resp)
	}
	tp, _ := b.meta.Image().Topic("legacy")
	if len(tp.Configs) != 1 || tp.Configs["max.message.bytes"] != "4096" {
		t.Fatalf("stored overrides %v", tp.Configs)
	}
	for i, r := range retentionOf(t, b, "legacy") {
		if r != 7*24*time.Hour {
			t.Fatalf("partition %d retention %v, want the default back", i, r)
		}
	}
	// The new max.message.bytes is enforced by Produce.
	cl := b.client(kgo.DefaultProduceTopic("legacy"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	err = cl.ProduceSync(adminCtx(t), &kgo.Record{Value: make([]byte, 10000)}).FirstErr()
	errIs(t, "record above max.message.bytes", err, kerr.MessageTooLarge)

	rc := dialRaw(t, b.addr)
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "legacy"
	cfg := kmsg.NewAlterConfigsRequestResourceConfig()
	cfg.Name = "retention.ms" // null value
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{cfg}
	req.Resources = []kmsg.AlterConfigsRequestResource{r, r}
	ar := rc.roundTrip(req).(*kmsg.AlterConfigsResponse)
	if ar.Resources[0].ErrorCode != kerr.InvalidRequest.Code || ar.Resources[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("duplicate resources: %+v", ar.Resources)
	}
	req.Resources = req.Resources[:1]
	ar = rc.roundTrip(req).(*kmsg.AlterConfigsResponse)
	// Kafka's messages (ConfigAdminManager.preprocess), as for BROKER
	// resources and IncrementalAlterConfigs: one path for all.
	if ar.Resources[0].ErrorCode != kerr.InvalidRequest.Code || unptr(ar.Resources[0].ErrorMessage) != "Null value not supported for : retention.ms" {
		t.Fatalf("null value: %+v", ar.Resources[0])
	}
	cfg.Value = kadm.StringPtr("1000")
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{cfg, cfg}
	ar = rc.roundTrip(req).(*kmsg.AlterConfigsResponse)
	if ar.Resources[0].ErrorCode != kerr.InvalidRequest.Code || unptr(ar.Resources[0].ErrorMessage) != "Error due to duplicate config keys" {
		t.Fatalf("config named twice: %+v", ar.Resources[0])
	}
}

func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAdminDescribeCluster(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cl := b.client()
	req := kmsg.NewPtrDescribeClusterRequest()
	resp := request[*kmsg.DescribeClusterResponse](t, cl, req)
	if resp.ErrorCode != 0 || resp.ClusterID != b.meta.Image().ClusterID() || resp.ControllerID != b.srv.cfg.NodeID {
		t.Fatalf("describe cluster: %+v", resp)
	}
	if len(resp.Brokers) != 1 || net2addr(resp.Brokers[0].Host, resp.Brokers[0].Port) != b.addr {
		t.Fatalf("brokers %+v, want %s", resp.Brokers, b.addr)
	}
	if resp.ClusterAuthorizedOperations != -2147483648 {
		t.Fatalf("authorized operations not asked for: %d", resp.ClusterAuthorizedOperations)
	}
	req.IncludeClusterAuthorizedOperations = true
	resp = request[*kmsg.DescribeClusterResponse](t, cl, req)
	if resp.ClusterAuthorizedOperations&(1<<8) == 0 { // DESCRIBE
		t.Fatalf("authorized operations %b", resp.ClusterAuthorizedOperations)
	}
	// kadm's view of the cluster agrees.
	adm, ctx := adminFor(t, b)
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || md.Cluster != resp.ClusterID || md.Controller != resp.ControllerID {
		t.Fatalf("kadm metadata %+v %v", md, err)
	}
}

func net2addr(host string, port int32) string { return host + ":" + strconv.Itoa(int(port)) }
