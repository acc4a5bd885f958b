package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkConsumeIsolation consumes a topic written in transactions (8
// partitions; transactions of 10 batches of 100 100-byte records, one in
// ten aborted) with read_uncommitted and with read_committed, through
// franz-go. b.N is the number of records written; records/s counts the
// records returned (read_committed returns 9 in 10).
//
//	go test ./broker/kafka -run XXX -bench ConsumeIsolation -benchtime 400000x -count 5
func BenchmarkConsumeIsolation(b *testing.B) {
	for _, c := range []struct {
		name  string
		level kgo.IsolationLevel
	}{{"read_uncommitted", kgo.ReadUncommitted()}, {"read_committed", kgo.ReadCommitted()}} {
		b.Run(c.name, func(b *testing.B) {
			br := startBroker(b)
			createTopic(b, br, "bench", 8, nil)
			want := writeTransactions(b, br, "bench", 8, b.N)
			if c.name == "read_uncommitted" {
				want = b.N / 1000 * 1000
			}
			cons := br.client(kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(c.level))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ResetTimer()
			start := time.Now()
			got := 0
			for got < want && ctx.Err() == nil {
				got += cons.PollFetches(ctx).NumRecords()
			}
			b.ReportMetric(float64(got)/time.Since(start).Seconds(), "records/s")
			if got != want {
				b.Fatalf("consumed %d records, want %d", got, want)
			}
		})
	}
}

// writeTransactions writes about n records to the partitions of topic in
// transactions (through the coordinators' append path and
// WriteTxnMarkersLocal) and returns how many are committed.
func writeTransactions(b *testing.B, br *testBroker, topic string, parts int32, n int) int {
	val := make([]byte, 100)
	vals := make([][]byte, 100)
	for i := range vals {
		vals[i] = val
	}
	committed := 0
	for txn := 0; txn < n/1000; txn++ {
		p := int32(txn) % parts
		pid := int64(1000 + p)
		ts, part := br.srv.parts.lookup(topic, p)
		for i := 0; i < 10; i++ {
			batch := txnBatchOf(pid, 0, vals)
			var sp kmsg.ProduceResponseTopicPartition
			if _, pe := br.srv.produceTo(9, -1, ts, part, batch, time.Now().UnixMilli(), &sp); pe != nil {
				b.Fatalf("append: %v", pe.msg)
			}
		}
		commit := txn%10 != 9
		if commit {
			committed += 1000
		}
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = pid, commit
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{p}}}
		req.Markers = append(req.Markers, m)
		resp := br.srv.WriteTxnMarkersLocal(context.Background(), req)
		if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("marker: error %d", code)
		}
	}
	return committed
}
