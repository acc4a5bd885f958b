package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
)

// FuzzDispatch feeds arbitrary request frames (the bytes after the size
// prefix) through header parsing, decoding and the handlers of a real
// server over a real log. Whatever the bytes, dispatch must not panic; it
// either refuses the frame (the connection would close) or queues
// well-formed response frames; and the records stored before stay intact.
// The seed corpus is in testdata/fuzz/FuzzDispatch.
func FuzzDispatch(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	b := startBroker(f)
	createTopic(f, b, "fuzz", 2, nil)
	_, p := b.srv.parts.lookup("fuzz", 0)
	seed := buildBatch([][]byte{[]byte("precious")}, 0, time.Now().UnixMilli())
	if _, err := p.log.Append(append([]byte(nil), seed...), 0); err != nil {
		f.Fatal(err)
	}
	p.log.SetHighWatermark(p.log.EndOffset())
	stored := storedBytes(f, p)

	f.Fuzz(func(t *testing.T, frame []byte) {
		dispatchFrame(t, b.srv, frame)
		if got := storedBytes(t, p); !bytes.Equal(got, stored[:len(got)]) || len(got) < len(stored) {
			t.Fatalf("stored records changed")
		}
	})
}

// dispatchFrame runs one request frame through a connection of srv: it
// must not panic, and every response frame it queues is well-formed.
func dispatchFrame(t *testing.T, srv *Server, frame []byte) {
	a, peer := net.Pipe()
	defer peer.Close()
	go io.Copy(io.Discard, peer) // responses written directly by dispatch
	c := newConn(srv, srv.bound[0], a)
	defer c.close()
	c.dispatch(append([]byte(nil), frame...), time.Now())
	c.cancel() // long polls answer at once
	close(c.queue)
	for sl := range c.queue {
		if sl.done != nil {
			<-sl.done
		}
		if sl.spliced != nil {
			sl.spliced.release()
		}
		if sl.frame != nil && sl.spliced == nil {
			if n := binary.BigEndian.Uint32(sl.frame); int(n) != len(sl.frame)-4 {
				t.Fatalf("response frame size %d for %d bytes", n, len(sl.frame)-4)
			}
		}
	}
}

// storedBytes reads the first batch of a partition.
func storedBytes(t testing.TB, p *partition) []byte {
	t.Helper()
	sec, err := p.log.Read(0, 1, p.log.HighWatermark())
	if err != nil {
		t.Fatal(err)
	}
	defer sec.Release()
	buf := make([]byte, sec.Len())
	if _, err := sec.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	// The base offset and leader epoch are stamped by the log; compare the
	// rest.
	return buf[log.OffMagic:]
}

// fuzzSeeds are valid request frames (after the size prefix) of every
// registered API at several versions, plus a few broken ones.
func fuzzSeeds() [][]byte {
	var out [][]byte
	add := func(req kmsg.Request) {
		fr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed")).AppendRequest(nil, req, 7)
		out = append(out, fr[4:])
	}
	for _, v := range []int16{0, 3} {
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version = v
		add(r)
	}
	for _, v := range []int16{0, 4, 9} {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = v
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr("fuzz")
		r.Topics = append(r.Topics, t)
		add(r)
	}
	for _, v := range []int16{3, 7, 9} {
		add(produceReq(v, "fuzz", buildBatch([][]byte{[]byte("x")}, 0, 1)))
	}
	for _, v := range []int16{4, 12} {
		add(fetchReq(v, "fuzz", 0, 10))
	}
	for _, v := range []int16{0, 7} {
		r := kmsg.NewPtrListOffsetsRequest()
		r.Version = v
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = "fuzz"
		t.Partitions = append(t.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, t)
		add(r)
	}
	out = append(out, []byte{0, 18, 0, 99, 0, 0, 0, 1, 0xff, 0xff}, []byte{0, 3}, []byte{})
	// Issue 18 (ops1): ApiVersions v4 (features), ListOffsets -4/-5 at
	// v9/v10, ListGroups v5 types, DescribeLogDirs, UpdateFeatures.
	{
		r := kmsg.NewPtrApiVersionsRequest()
		r.Version, r.ClientSoftwareName, r.ClientSoftwareVersion = 4, "seed", "1"
		add(r)
		for _, c := range []struct {
			v  int16
			ts int64
		}{{9, -4}, {10, -5}} {
			lo := kmsg.NewPtrListOffsetsRequest()
			lo.Version = c.v
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = "fuzz"
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = c.ts
			t.Partitions = append(t.Partitions, p)
			lo.Topics = append(lo.Topics, t)
			add(lo)
		}
		lg := kmsg.NewPtrListGroupsRequest()
		lg.Version, lg.TypesFilter = 5, []string{"classic", "Consumer"}
		add(lg)
		for _, v := range []int16{1, 4} {
			dl := kmsg.NewPtrDescribeLogDirsRequest()
			dl.Version = v
			if v == 4 {
				dl.Topics = []kmsg.DescribeLogDirsRequestTopic{{Topic: "fuzz", Partitions: []int32{0, 1}}}
			}
			add(dl)
		}
		for _, v := range []int16{0, 2} {
			uf := kmsg.NewPtrUpdateFeaturesRequest()
			uf.Version = v
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 2, 1
			uf.FeatureUpdates = append(uf.FeatureUpdates, u)
			add(uf)
		}
	}
	for _, v := range []int16{0, 3} {
		add(txnOffsetCommitReq(v, "tx", "g", map[string][]int32{"fuzz": {0}}))
	}
	{
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version, r.Group, r.RequireStable = 7, "g", true
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "fuzz", Partitions: []int32{0}}}
		add(r)
	}
	// The transaction coordinator's requests (txcoord).
	{
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorKey, r.CoordinatorType = 3, "tx", 1
		add(r)
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.Version, ip.TransactionalID, ip.TransactionTimeoutMillis, ip.ProducerID, ip.ProducerEpoch = 4, kmsg.StringPtr("tx"), 60000, -1, -1
		add(ip)
		for _, v := range []int16{0, 3} {
			ap := kmsg.NewPtrAddPartitionsToTxnRequest()
			ap.Version, ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = v, "tx", 1, 0
			ap.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "fuzz", Partitions: []int32{0, 1}}}
			add(ap)
		}
		av := kmsg.NewPtrAddPartitionsToTxnRequest()
		av.Version = 5
		av.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "tx", ProducerID: 1, VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "fuzz", Partitions: []int32{0}}}}}
		add(av)
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.Version, ao.TransactionalID, ao.ProducerID, ao.Group = 3, "tx", 1, "g"
		add(ao)
		for _, v := range []int16{0, 3} {
			e := kmsg.NewPtrEndTxnRequest()
			e.Version, e.TransactionalID, e.ProducerID, e.Commit = v, "tx", 1, v == 3
			add(e)
		}
		d := kmsg.NewPtrDescribeTransactionsRequest()
		d.TransactionalIDs = []string{"tx", ""}
		add(d)
		l := kmsg.NewPtrListTransactionsRequest()
		l.Version, l.StateFilters, l.ProducerIDFilters, l.DurationFilterMillis, l.TransactionalIDPattern = 2, []string{"Ongoing", "x"}, []int64{1}, 0, kmsg.StringPtr("t.*")
		add(l)
	}
	// Reassignments (reassign): start (a broker twice too), cancel, list.
	{
		r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		r.TimeoutMillis = 1000
		r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "fuzz", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{
			{Partition: 0, Replicas: []int32{1}}, {Partition: 1, Replicas: []int32{1, 1}}, {Partition: 2, Replicas: nil},
		}}}
		add(r)
		add(kmsg.NewPtrListPartitionReassignmentsRequest())
		lr := kmsg.NewPtrListPartitionReassignmentsRequest()
		lr.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: "fuzz", Partitions: []int32{0, 5, -1}}}
		add(lr)
	}
	return out
}

// TestWriteFuzzSeedCorpus regenerates testdata/fuzz/FuzzDispatch from
// fuzzSeeds when WEIR_WRITE_FUZZ_CORPUS=1; otherwise it checks that the
// committed corpus exists.
func TestWriteFuzzSeedCorpus(t *testing.T) { seedCorpus(t, "FuzzDispatch", fuzzSeeds()) }

// seedCorpus writes seeds as testdata/fuzz/<fuzzer> when
// WEIR_WRITE_FUZZ_CORPUS=1, and otherwise checks the committed corpus.
func seedCorpus(t *testing.T, fuzzer string, seeds [][]byte) {
	dir := filepath.Join("testdata", "fuzz", fuzzer)
	if os.Getenv("WEIR_WRITE_FUZZ_CORPUS") != "1" {
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) < len(seeds) {
			t.Fatalf("seed corpus %s missing or incomplete (%v): run with WEIR_WRITE_FUZZ_CORPUS=1", dir, err)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, s := range seeds {
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
