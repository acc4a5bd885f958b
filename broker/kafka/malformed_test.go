package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
)

func produceReq(version int16, topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// storedState is what must not change: every partition's end offset and
// the records consumed from the start.
func storedState(t *testing.T, b *testBroker, topic string) (int64, []string) {
	t.Helper()
	ts, p := b.srv.parts.lookup(topic, 0)
	if ts == nil || p == nil {
		t.Fatalf("topic %s not hosted", topic)
	}
	end := p.log.EndOffset()
	cl := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var vals []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for int64(len(vals)) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(vals), end)
		}
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	cl.Close()
	return end, vals
}

func TestMalformedProduceGetsKafkaErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "m", 1, map[string]string{"max.message.bytes": "2000"})
	rc := dialRaw(t, b.addr)
	good := buildBatch([][]byte{[]byte("one"), []byte("two")}, 0, time.Now().UnixMilli())
	if resp := rc.roundTrip(produceReq(7, "m", good)).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("good batch: error %d", resp.Topics[0].Partitions[0].ErrorCode)
	}
	endBefore, valsBefore := storedState(t, b, "m")

	mut := func(f func(b []byte) []byte) []byte {
		c := append([]byte(nil), good...)
		return f(c)
	}
	cases := []struct {
		name    string
		version int16
		batch   []byte
		want    *kerr.Error
	}{
		{"bad crc", 7, mut(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }), kerr.CorruptMessage},
		{"magic 1", 7, mut(func(b []byte) []byte { b[log.OffMagic] = 1; fixCRC(b); return b }), kerr.CorruptMessage},
		{"truncated", 7, good[:len(good)-3], kerr.CorruptMessage},
		{"short header", 7, good[:30], kerr.CorruptMessage},
		{"trailing garbage", 7, append(append([]byte(nil), good...), 1, 2, 3), kerr.CorruptMessage},
		{"count vs lastOffsetDelta", 7, mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[log.OffLastOffsetDelta:], 5)
			fixCRC(b)
			return b
		}), kerr.InvalidRecord},
		{"record framing", 7, mut(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[log.OffNumRecords:], 3)
			binary.BigEndian.PutUint32(b[log.OffLastOffsetDelta:], 2)
			fixCRC(b)
			return b
		}), kerr.CorruptMessage},
		{"unknown codec", 7, mut(func(b []byte) []byte { b[log.OffAttributes+1] = 6; fixCRC(b); return b }), kerr.CorruptMessage},
		{"zstd before v7", 6, mut(func(b []byte) []byte { b[log.OffAttributes+1] = log.CodecZstd; fixCRC(b); return b }), kerr.UnsupportedCompressionType},
		{"control batch", 7, mut(func(b []byte) []byte { b[log.OffAttributes+1] |= log.AttrControl; fixCRC(b); return b }), kerr.InvalidRecord},
		{"too large", 7, buildBatch([][]byte{bytes.Repeat([]byte("x"), 3000)}, 0, time.Now().UnixMilli()), kerr.MessageTooLarge},
		{"empty", 7, nil, kerr.CorruptMessage},
	}
	for _, c := range cases {
		resp := rc.roundTrip(produceReq(c.version, "m", c.batch)).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != c.want.Code {
			t.Errorf("%s: error %d (%v), want %s", c.name, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode), c.want.Message)
		}
		if p.BaseOffset != -1 {
			t.Errorf("%s: base offset %d on error", c.name, p.BaseOffset)
		}
		if c.version >= 8 && p.ErrorMessage == nil {
			t.Errorf("%s: no error message", c.name)
		}
	}
	// Bad acks and unknown topic/partition.
	req := produceReq(7, "m", good)
	req.Acks = 2
	if p := rc.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Errorf("acks 2: error %d", p.ErrorCode)
	}
	if p := rc.roundTrip(produceReq(7, "absent", good)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("absent topic: error %d", p.ErrorCode)
	}
	endAfter, valsAfter := storedState(t, b, "m")
	if endAfter != endBefore || len(valsAfter) != len(valsBefore) {
		t.Fatalf("stored data changed: end %d -> %d, %v -> %v", endBefore, endAfter, valsBefore, valsAfter)
	}
}

func TestMalformedFramesCloseOnlyThatConnection(t *testing.T) {
	t.Parallel()
	b := startBroker(t, func(c *Config) { c.MaxRequestBytes = 1 << 20 })
	createTopic(t, b, "keep", 1, nil)
	rc := dialRaw(t, b.addr)
	if resp := rc.roundTrip(produceReq(7, "keep", buildBatch([][]byte{[]byte("kept")}, 0, time.Now().UnixMilli()))).(*kmsg.ProduceResponse); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatal("seed produce failed")
	}
	endBefore, valsBefore := storedState(t, b, "keep")

	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	hdr := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	}
	validProduce := (&rawConn{}).frame(produceReq(7, "keep", buildBatch([][]byte{[]byte("nope")}, 0, 0)))
	cases := map[string][]byte{
		"oversize request":       binary.BigEndian.AppendUint32(nil, 2<<20),
		"negative size":          binary.BigEndian.AppendUint32(nil, 0xfffffff0),
		"too short for a header": frame([]byte{0, 3, 0}),
		"unknown api key":        frame(hdr(999, 0)),
		"unregistered api key":   frame(hdr(int16(kmsg.DescribeUserSCRAMCredentials), 0)),
		"produce v2":             frame(hdr(0, 2)),
		"produce v99":            frame(hdr(0, 99)),
		"garbage body":           frame(append(hdr(3, 9), 0xff, 0xff, 0xff, 0xff, 0xff)),
		"truncated client id":    frame([]byte{0, 18, 0, 0, 0, 0, 0, 1, 0, 10, 'a'}),
		"truncated produce":      validProduce[:len(validProduce)-10],
	}
	for name, data := range cases {
		rc := dialRaw(t, b.addr)
		rc.write(data)
		if name == "truncated produce" {
			rc.c.(interface{ CloseWrite() error }).CloseWrite()
		}
		rc.expectClosed()
	}
	// The truncated produce's declared size tricks nothing: re-sending the
	// rest on the same connection is impossible (it was closed).

	// ApiVersions at an unknown version: UNSUPPORTED_VERSION with a v0 body
	// (KIP-511), and the connection stays usable.
	rc2 := dialRaw(t, b.addr)
	rc2.write(frame(append(hdr(18, 99), 0, 0, 0)))
	raw, err := rc2.readFrame(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	av := kmsg.NewPtrApiVersionsResponse()
	av.Version = 0
	if err := av.ReadFrom(raw[4:]); err != nil {
		t.Fatal(err)
	}
	if av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v99: error %d, %d keys", av.ErrorCode, len(av.ApiKeys))
	}
	if resp := rc2.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions after v99: error %d", resp.ErrorCode)
	}

	// The broker is up and nothing stored changed.
	endAfter, valsAfter := storedState(t, b, "keep")
	if endAfter != endBefore || len(valsAfter) != len(valsBefore) || valsAfter[0] != "kept" {
		t.Fatalf("stored data changed: end %d -> %d, %v -> %v", endBefore, endAfter, valsBefore, valsAfter)
	}
	var rejected float64
	mfs, _ := b.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "weir_kafka_rejected_requests_total" {
			rejected = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if rejected < float64(len(cases)-1) {
		t.Errorf("rejected_requests_total = %v, want >= %d", rejected, len(cases)-1)
	}
}
