package kafka

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
)

// idemBatch is a batch of n records from producer 5, epoch 0, at seq.
func idemBatch(n int, seq int32) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = []byte{byte(seq), byte(i)}
	}
	b := buildBatch(vals, 0, time.Now().UnixMilli())
	binary.BigEndian.PutUint64(b[log.OffProducerID:], 5)
	binary.BigEndian.PutUint16(b[log.OffProducerEpoch:], 0)
	binary.BigEndian.PutUint32(b[log.OffBaseSequence:], uint32(seq))
	fixCRC(b)
	return b
}

// TestProduceCallsProducerState checks that Produce goes through
// broker/txn: a resent batch is stored once and answered with its original
// offset, also after a restart; a gap gets OUT_OF_ORDER_SEQUENCE_NUMBER.
func TestProduceCallsProducerState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBrokerIn(t, dir)
	createTopic(t, b, "idem", 1, nil)
	rc := dialRaw(t, b.addr)
	send := func(rc *rawConn, batch []byte) kmsg.ProduceResponseTopicPartition {
		return rc.roundTrip(produceReq(9, "idem", batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	if p := send(rc, idemBatch(3, 0)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", p)
	}
	if p := send(rc, idemBatch(2, 3)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("second batch: %+v", p)
	}
	if p := send(rc, idemBatch(3, 0)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("resent first batch: %+v", p)
	}
	if p := send(rc, idemBatch(1, 9)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %+v", p)
	}
	_, part := b.srv.parts.lookup("idem", 0)
	if end := part.log.EndOffset(); end != 5 {
		t.Fatalf("end offset %d, want 5 (duplicates stored once)", end)
	}
	b.stop()

	b = startBrokerIn(t, dir)
	rc = dialRaw(t, b.addr)
	if p := send(rc, idemBatch(2, 3)); p.ErrorCode != 0 || p.BaseOffset != 3 {
		t.Fatalf("resent second batch after restart: %+v", p)
	}
	if p := send(rc, idemBatch(1, 5)); p.ErrorCode != 0 || p.BaseOffset != 5 {
		t.Fatalf("next batch after restart: %+v", p)
	}
	_, part = b.srv.parts.lookup("idem", 0)
	if end := part.log.EndOffset(); end != 6 {
		t.Fatalf("end offset after restart %d, want 6", end)
	}
}
