package kafka

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchReq(version int16, topic string, offset int64, maxWaitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxWaitMillis = maxWaitMs
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestFetchLongPoll(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "poll", 1, nil)
	prod := b.client(kgo.DefaultProduceTopic("poll"))

	// Nothing to read: the fetch waits about MaxWaitMillis, then answers
	// empty.
	for _, v := range []int16{4, 11, 12} {
		rc := dialRaw(t, b.addr)
		start := time.Now()
		resp := rc.roundTrip(fetchReq(v, "poll", 0, 600)).(*kmsg.FetchResponse)
		el := time.Since(start)
		if el < 550*time.Millisecond || el > 5*time.Second {
			t.Errorf("v%d: empty long poll took %s, want about 600ms", v, el)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
			t.Errorf("v%d: empty poll answered %+v", v, p)
		}
	}

	// Data arriving during the wait ends it at once.
	rc := dialRaw(t, b.addr)
	rc.write(rc.frame(fetchReq(12, "poll", 0, 20000)))
	// Pipeline an ApiVersions behind the waiting fetch: the fetch must not
	// block reading it, and its response must come second.
	av := kmsg.NewPtrApiVersionsRequest()
	rc.write(rc.frame(av))
	time.Sleep(50 * time.Millisecond) // let the fetch start waiting (the test holds either way)
	start := time.Now()
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("wake up")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	first, err := rc.readFrame(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("fetch answered %s after the produce, want promptly", el)
	}
	if corr := int32(binary.BigEndian.Uint32(first)); corr != 1 {
		t.Fatalf("first response has correlation id %d, want the fetch's (1)", corr)
	}
	fr := kmsg.NewPtrFetchResponse()
	fr.Version = 12
	if err := fr.ReadFrom(first[5:]); err != nil {
		t.Fatal(err)
	}
	p := fr.Topics[0].Partitions[0]
	if p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("woken fetch: hw %d, %d record bytes", p.HighWatermark, len(p.RecordBatches))
	}
	second, err := rc.readFrame(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(second)); corr != 2 {
		t.Fatalf("second response has correlation id %d, want 2", corr)
	}
}

func TestFetchErrorsAndLimits(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "lim", 2, nil)
	cl := b.client(kgo.DefaultProduceTopic("lim"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < 50; i++ {
		big := make([]byte, 10_000)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: int32(i % 2), Value: big}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rc := dialRaw(t, b.addr)

	// Out of range above the end and below the start.
	for _, off := range []int64{26, -1} {
		resp := rc.roundTrip(fetchReq(11, "lim", off, 0)).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 25 || p.LogStartOffset != 0 {
			t.Errorf("offset %d: %+v", off, p)
		}
	}
	// Unknown topic and partition.
	req := fetchReq(11, "nope", 0, 5000)
	resp := rc.roundTrip(req).(*kmsg.FetchResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: error %d", c)
	}
	// A session id we never handed out.
	req = fetchReq(11, "lim", 0, 0)
	req.SessionID = 77
	if resp := rc.roundTrip(req).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("session 77: error %d", resp.ErrorCode)
	}
	// MaxBytes: the first partition returns at least one batch even if
	// MaxBytes is tiny; the second gets nothing once the budget is spent.
	req = fetchReq(11, "lim", 0, 0)
	rp1 := req.Topics[0].Partitions[0]
	rp1.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp1)
	req.MaxBytes = 100
	resp = rc.roundTrip(req).(*kmsg.FetchResponse)
	p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
	if len(p0.RecordBatches) < 10_000 || len(p1.RecordBatches) != 0 {
		t.Errorf("MaxBytes 100: p0 %d bytes, p1 %d bytes", len(p0.RecordBatches), len(p1.RecordBatches))
	}
	// PartitionMaxBytes bounds each partition (beyond the first batch).
	req.MaxBytes = 50 << 20
	req.Topics[0].Partitions[0].PartitionMaxBytes = 25_000
	req.Topics[0].Partitions[1].PartitionMaxBytes = 25_000
	resp = rc.roundTrip(req).(*kmsg.FetchResponse)
	for _, p := range resp.Topics[0].Partitions {
		if n := len(p.RecordBatches); n < 10_000 || n > 25_000 {
			t.Errorf("PartitionMaxBytes 25000: partition %d got %d bytes", p.Partition, n)
		}
	}
}

func TestListOffsets(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "lo", 1, nil)
	cl := b.client(kgo.DefaultProduceTopic("lo"))
	base := time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rc := dialRaw(t, b.addr)
	query := func(v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rp.MaxNumOffsets = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	for _, v := range []int16{1, 4, 7} {
		if p := query(v, -2); p.ErrorCode != 0 || p.Offset != 0 {
			t.Errorf("v%d earliest: %+v", v, p)
		}
		if p := query(v, -1); p.ErrorCode != 0 || p.Offset != 10 {
			t.Errorf("v%d latest: %+v", v, p)
		}
		if p := query(v, base.Add(4500*time.Millisecond).UnixMilli()); p.ErrorCode != 0 || p.Offset != 5 || p.Timestamp != base.Add(5*time.Second).UnixMilli() {
			t.Errorf("v%d by time: %+v", v, p)
		}
		if p := query(v, base.Add(time.Hour).UnixMilli()); p.ErrorCode != 0 || p.Offset != -1 {
			t.Errorf("v%d after the end: %+v", v, p)
		}
	}
	if p := query(7, -3); p.ErrorCode != 0 || p.Offset != 9 || p.Timestamp != base.Add(9*time.Second).UnixMilli() {
		t.Errorf("max timestamp: %+v", p)
	}
	if p := query(0, -1); p.ErrorCode != 0 || len(p.OldStyleOffsets) != 1 || p.OldStyleOffsets[0] != 10 {
		t.Errorf("v0 latest: %+v", p)
	}
}

// TestListOffsetsLocalAndTiered: earliest-local (-4, v8+) is the log start
// offset and latest-tiered (-5, v9+) is -1 with leader epoch -1, as Kafka
// answers them without remote storage; below their versions, and for
// timestamps Kafka does not know, UNSUPPORTED_VERSION.
func TestListOffsetsLocalAndTiered(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "lt", 1, nil)
	cl := b.client(kgo.DefaultProduceTopic("lt"))
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Move the log start to 4.
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 10_000
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "lt"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Offset = 4
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	if resp, err := dr.RequestWith(context.Background(), cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete records: %v %+v", err, resp)
	}
	rc := dialRaw(t, b.addr)
	query := func(v int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lt"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rc.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	for _, v := range []int16{8, 9, 10} {
		if p := query(v, -4); p.ErrorCode != 0 || p.Offset != 4 || p.Timestamp != -1 {
			t.Errorf("v%d earliest-local: %+v", v, p)
		}
		if p := query(v, -2); p.ErrorCode != 0 || p.Offset != 4 {
			t.Errorf("v%d earliest: %+v", v, p)
		}
	}
	for _, v := range []int16{9, 10} {
		if p := query(v, -5); p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
			t.Errorf("v%d latest-tiered: %+v", v, p)
		}
	}
	for _, c := range []struct {
		v  int16
		ts int64
	}{{7, -4}, {8, -5}, {6, -3}, {10, -6}, {10, -7}} {
		if p := query(c.v, c.ts); p.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("v%d timestamp %d: %+v, want UNSUPPORTED_VERSION", c.v, c.ts, p)
		}
	}
}
