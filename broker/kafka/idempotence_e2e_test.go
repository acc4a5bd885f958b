package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/txn"
)

// End-to-end idempotence: InitProducerId (22) and Produce with producer
// ids, against a real in-process broker, including restarts over the same
// data directory.

// withProducerIDs makes the broker reserve producer ids in its data dir.
func withProducerIDs(t *testing.T, b *testBroker) {
	t.Helper()
	store, err := txn.OpenFileBlockStore(vfs.OS, b.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.srv.SetProducerIDStore(store); err != nil {
		t.Fatal(err)
	}
}

// pidBatch is a hand-built batch of n records of producer pid/epoch at seq.
func pidBatch(pid int64, epoch int16, seq int32, n int, tag string) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = []byte(fmt.Sprintf("%s-%d-%d", tag, seq, i))
	}
	b := buildBatch(vals, 0, time.Now().UnixMilli())
	binary.BigEndian.PutUint64(b[log.OffProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[log.OffProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[log.OffBaseSequence:], uint32(seq))
	fixCRC(b)
	return b
}

func initProducerID(t *testing.T, rc *rawConn, version int16, txnID *string) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	return rc.roundTrip(req).(*kmsg.InitProducerIDResponse)
}

type sent struct {
	code int16
	base int64
}

func sendBatch(rc *rawConn, topic string, partition int32, batch []byte) sent {
	req := produceReq(9, topic, batch)
	req.Acks = -1
	req.Topics[0].Partitions[0].Partition = partition
	p := rc.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return sent{p.ErrorCode, p.BaseOffset}
}

func TestIdempotentProduceRawAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBrokerIn(t, dir)
	withProducerIDs(t, b)
	createTopic(t, b, "idem", 2, nil)
	rc := dialRaw(t, b.addr)

	// Two producers from InitProducerId: distinct ids, epoch 0.
	r1 := initProducerID(t, rc, 4, nil)
	r2 := initProducerID(t, rc, 0, nil)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 || r1.ProducerEpoch != 0 || r2.ProducerID <= r1.ProducerID {
		t.Fatalf("init producer id: %+v %+v", r1, r2)
	}
	p1, p2 := r1.ProducerID, r2.ProducerID

	expect := func(what string, got sent, code *kerr.Error, base int64) {
		t.Helper()
		want := int16(0)
		if code != nil {
			want = code.Code
		}
		if got.code != want || (code == nil && got.base != base) {
			t.Fatalf("%s: code %d base %d, want code %d base %d", what, got.code, got.base, want, base)
		}
	}
	expect("p1 seq 0", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 0, 3, "a")), nil, 0)
	expect("p2 seq 0", sendBatch(rc, "idem", 0, pidBatch(p2, 0, 0, 2, "b")), nil, 3)
	expect("p1 seq 3", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 3, 1, "a")), nil, 5)
	expect("p1 resend seq 0", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 0, 3, "a")), nil, 0)
	expect("p2 resend seq 0", sendBatch(rc, "idem", 0, pidBatch(p2, 0, 0, 2, "b")), nil, 3)
	expect("p1 gap", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 9, 1, "a")), kerr.OutOfOrderSequenceNumber, 0)
	// Sequences are per partition: p1 starts over on partition 1.
	expect("p1 partition 1", sendBatch(rc, "idem", 1, pidBatch(p1, 0, 0, 1, "a")), nil, 0)
	// A new epoch must start at 0; then the old epoch is fenced.
	expect("p2 epoch 1 seq 5", sendBatch(rc, "idem", 0, pidBatch(p2, 1, 5, 1, "b")), kerr.OutOfOrderSequenceNumber, 0)
	expect("p2 epoch 1 seq 0", sendBatch(rc, "idem", 0, pidBatch(p2, 1, 0, 1, "b")), nil, 6)
	expect("p2 epoch 0", sendBatch(rc, "idem", 0, pidBatch(p2, 0, 2, 1, "b")), kerr.InvalidProducerEpoch, 0)
	endBefore := b.srv.parts.load()["idem"].parts[0].log.EndOffset()
	if endBefore != 7 {
		t.Fatalf("end offset %d, want 7 (each batch stored once)", endBefore)
	}

	// Clean restart: state from the snapshot written at shutdown.
	b.stop()
	b = startBrokerIn(t, dir)
	withProducerIDs(t, b)
	rc = dialRaw(t, b.addr)
	expect("p1 resend seq 3 after restart", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 3, 1, "a")), nil, 5)
	expect("p2 resend epoch 1 after restart", sendBatch(rc, "idem", 0, pidBatch(p2, 1, 0, 1, "b")), nil, 6)
	expect("p1 gap after restart", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 5, 1, "a")), kerr.OutOfOrderSequenceNumber, 0)
	expect("p1 seq 4 after restart", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 4, 2, "a")), nil, 7)
	// Producer ids are never reused after a restart.
	if r := initProducerID(t, rc, 3, nil); r.ErrorCode != 0 || r.ProducerID <= p2 {
		t.Fatalf("producer id after restart %d, last before %d", r.ProducerID, p2)
	}

	// Restart without snapshots (as after a crash before any was written):
	// the state is rebuilt from the log's batch headers.
	b.stop()
	removed := removeSnapshots(t, filepath.Join(dir, "idem-0"))
	if removed == 0 {
		t.Fatal("no producer-state snapshot was written at shutdown")
	}
	b = startBrokerIn(t, dir)
	rc = dialRaw(t, b.addr)
	expect("p1 resend seq 4 after rebuild", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 4, 2, "a")), nil, 7)
	expect("p2 resend after rebuild", sendBatch(rc, "idem", 0, pidBatch(p2, 1, 0, 1, "b")), nil, 6)
	expect("p2 epoch 0 after rebuild", sendBatch(rc, "idem", 0, pidBatch(p2, 0, 3, 1, "b")), kerr.InvalidProducerEpoch, 0)
	expect("p1 seq 6 after rebuild", sendBatch(rc, "idem", 0, pidBatch(p1, 0, 6, 1, "a")), nil, 9)
	if end := b.srv.parts.load()["idem"].parts[0].log.EndOffset(); end != 10 {
		t.Fatalf("end offset %d, want 10", end)
	}

	// Every record is stored exactly once, in order.
	want := []string{"a-0-0", "a-0-1", "a-0-2", "b-0-0", "b-0-1", "a-3-0", "b-0-0", "a-4-0", "a-4-1", "a-6-0"}
	got := consumeValues(t, b, "idem", 0, 10)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("stored records\n got %v\nwant %v", got, want)
	}
}

func removeSnapshots(t *testing.T, dir string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	return len(names)
}

// consumeValues reads n records of one partition from the start.
func consumeValues(t *testing.T, b *testBroker, topic string, partition int32, n int) []string {
	t.Helper()
	cl := b.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func TestInitProducerIDTransactional(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	rc := dialRaw(t, b.addr)
	if r := initProducerID(t, rc, 4, kmsg.StringPtr("txn-1")); r.ErrorCode != 0 || r.ProducerID < 0 || r.ProducerEpoch != 0 {
		t.Fatalf("transactional: %+v", r)
	}
	if r := initProducerID(t, rc, 4, kmsg.StringPtr("")); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty transactional id: %+v", r)
	}
	// Without a configured store the ids still increase.
	a, c := initProducerID(t, rc, 2, nil), initProducerID(t, rc, 2, nil)
	if a.ErrorCode != 0 || c.ErrorCode != 0 || c.ProducerID <= a.ProducerID {
		t.Fatalf("ids %d then %d", a.ProducerID, c.ProducerID)
	}
}

// TestFranzIdempotentProducer: franz-go's default producer is idempotent:
// it calls InitProducerId and numbers its batches; with many in flight per
// partition and small batches, every record arrives once and in order.
func TestFranzIdempotentProducer(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	withProducerIDs(t, b)
	const parts, perPart = 4, 2000
	createTopic(t, b, "franz-idem", parts, nil)
	cl := b.client(
		kgo.DefaultProduceTopic("franz-idem"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(2048),
		kgo.ProducerLinger(0),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < parts*perPart; i++ {
		wg.Add(1)
		r := &kgo.Record{Partition: int32(i % parts), Value: []byte(fmt.Sprintf("%d", i/parts))}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	// The producer state saw exactly one producer, with sequences that
	// reached perPart-1 on every partition.
	for p := int32(0); p < parts; p++ {
		_, part := b.srv.parts.lookup("franz-idem", p)
		if n := part.prod.NumProducers(); n != 1 {
			t.Fatalf("partition %d tracks %d producers, want 1", p, n)
		}
		if end := part.log.EndOffset(); end != perPart {
			t.Fatalf("partition %d has %d records, want %d", p, end, perPart)
		}
		got := consumeValues(t, b, "franz-idem", p, perPart)
		for i, v := range got {
			if v != fmt.Sprint(i) {
				t.Fatalf("partition %d record %d is %q", p, i, v)
			}
		}
	}
}

// cuttingDialer records every connection so the test can cut them all.
type cuttingDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	cuts  int
}

func (d *cuttingDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

func (d *cuttingDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
	d.cuts++
}

// TestFranzIdempotentProducerSurvivesConnectionCuts cuts the producer's
// connections again and again while it produces: requests whose responses
// are lost are resent with the same sequences, and the broker must store
// each batch once. Every record must arrive exactly once, in order. Rounds
// repeat until the broker has answered at least one resend as a duplicate
// (so the dedup path was really taken), at most 10.
func TestFranzIdempotentProducerSurvivesConnectionCuts(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	withProducerIDs(t, b)
	const parts, perRound = 2, 3000
	createTopic(t, b, "cuts", parts, nil)
	d := &cuttingDialer{}
	cl := b.client(
		kgo.DefaultProduceTopic("cuts"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1024),
		kgo.ProducerLinger(0),
		kgo.Dialer(d.dial),
		kgo.RetryBackoffFn(func(int) time.Duration { return time.Millisecond }),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	duplicates := func() (n int64) {
		for p := int32(0); p < parts; p++ {
			_, part := b.srv.parts.lookup("cuts", p)
			n += part.prod.Duplicates()
		}
		return n
	}
	next := 0 // records per partition so far
	var acked atomic.Int64
	for round := 0; round < 10 && (round == 0 || duplicates() == 0); round++ {
		stop, cutterDone := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(cutterDone)
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					d.cut()
				}
			}
		}()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for i := 0; i < parts*perRound; i++ {
			wg.Add(1)
			r := &kgo.Record{Partition: int32(i % parts), Value: []byte(fmt.Sprint(next + i/parts))}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				defer wg.Done()
				// Also cut every 500 answers, so that every round cuts
				// while requests are in flight however fast it runs (the
				// timer alone cut 3 times in 10 rounds on a quiet machine).
				if acked.Add(1)%500 == 0 {
					d.cut()
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(stop)
		<-cutterDone
		if firstErr != nil {
			t.Fatal(firstErr)
		}
		next += perRound
	}
	t.Logf("%d records per partition, %d connection cuts, %d duplicates answered", next, d.cuts, duplicates())
	if duplicates() == 0 {
		t.Fatal("no resend was ever answered as a duplicate; the test did not exercise dedup")
	}
	for p := int32(0); p < parts; p++ {
		_, part := b.srv.parts.lookup("cuts", p)
		if end := part.log.EndOffset(); end != int64(next) {
			t.Fatalf("partition %d has %d records, want %d (duplicates stored?)", p, end, next)
		}
		for i, v := range consumeValues(t, b, "cuts", p, next) {
			if v != fmt.Sprint(i) {
				t.Fatalf("partition %d record %d is %q", p, i, v)
			}
		}
	}
}
