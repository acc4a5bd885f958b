package brokertest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/smallfs"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/internal/testkit"
	"weir/internal/weircluster"
)

// newProcNode starts one `weir broker` process (a single-node cluster,
// node 1) with its data directory at dataDir.
func newProcNode(t *testing.T, dataDir string) *procCluster {
	t.Helper()
	c := startProcCluster(t, 1, weircluster.Options{DataDirs: map[int]string{1: dataDir}})
	if t.Failed() {
		t.FailNow()
	}
	return c
}

// rawBatch is a RecordBatch v2 of one record; producer -1 for none.
func rawBatch(value string, producerID int64, epoch int16, seq int32) []byte {
	r := kmsg.Record{Value: []byte(value)}
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1)
	raw := r.AppendTo(nil)
	rb := kmsg.RecordBatch{Magic: 2, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: 1, Records: raw}
	rb.Length = int32(61 - 12 + len(raw))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawProducer is an idempotent producer speaking Produce itself, so the
// test controls sequence numbers and can resend a batch as is.
type rawProducer struct {
	cl    *kgo.Client
	topic string
	id    int64
	epoch int16
}

func (p *rawProducer) send(ctx context.Context, value string, seq int32) (base int64, code int16, err error) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = p.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch(value, p.id, p.epoch, seq)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return 0, 0, err
	}
	pr := resp.Topics[0].Partitions[0]
	return pr.BaseOffset, pr.ErrorCode, nil
}

// TestProcessDiskFull is issue 14's operator test: one broker with its data
// directory on a small tmpfs, three producers of 1 KiB records (acks=all,
// no retries, segments of 64 KiB so the disk fills across rolls) and an
// idempotent producer, until writes fail with KAFKA_STORAGE_ERROR; then
// space is freed, writes resume, the broker is killed with SIGKILL and
// restarted. It checks that no segment on disk ever holds a torn or bad-CRC
// batch (before and after the restart), that the restarted broker reports
// no corrupt data, that every acknowledged record is there exactly once,
// and that the idempotent producer's resent batch is deduplicated and its
// next one accepted.
func TestProcessDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level disk-full test")
	}
	t0 := time.Now()
	fs := smallfs.Mount(t, 16<<20)
	defer func() { t.Logf("test body took %v", time.Since(t0)) }()
	dataDir := filepath.Join(fs.Dir, "data")
	c := newProcNode(t, dataDir)
	seeds := c.Seeds()
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	const (
		topic = "full"
		parts = 3
		idem  = "idem"
	)
	seg := map[string]*string{"internal.segment.bytes": kmsg.StringPtr(strconv.Itoa(64 << 10))}
	for name, n := range map[string]int32{topic: parts, idem: 1} {
		testkit.CheckFor(t, 30*time.Second, func() error {
			rs, err := kadm.NewClient(adm).CreateTopic(ctx, n, 1, seg, name)
			if err != nil {
				return err
			}
			if errors.Is(rs.Err, kerr.TopicAlreadyExists) {
				return nil
			}
			return rs.Err
		})
	}
	testkit.CheckFor(t, 30*time.Second, func() error { return c.allPartitionsLed(topic, parts, -1) })

	pid := kmsg.NewPtrInitProducerIDRequest()
	var rp *rawProducer
	testkit.CheckFor(t, 30*time.Second, func() error {
		resp, err := pid.RequestWith(ctx, adm)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		rp = &rawProducer{cl: adm, topic: idem, id: resp.ProducerID, epoch: resp.ProducerEpoch}
		return nil
	})
	fs.Fill(3 << 20) // leave 3 MiB
	t.Logf("%d bytes free before producing (broker up after %v)", fs.Available(), time.Since(t0))
	began := time.Now()

	var (
		mu          sync.Mutex
		acked       = map[string]bool{}
		failed      = map[string]bool{}
		storageErrs int
	)
	value := func(p, i int) string { return fmt.Sprintf("p%d-%06d-%s", p, i, strings.Repeat("v", 1000)) }
	// produce runs the three producers until stop, each with one record in
	// flight at a time per partition it round-robins over.
	produce := func(round int, until func() bool) {
		var wg sync.WaitGroup
		for p := 0; p < 3; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DisableIdempotentWrite(),
					kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
					kgo.ProducerLinger(0), kgo.RecordDeliveryTimeout(10*time.Second), kgo.ProducerBatchCompression(kgo.NoCompression()))
				if err != nil {
					t.Error(err)
					return
				}
				defer cl.Close()
				for i := 0; !until(); i++ {
					v := value(p, round*1_000_000+i)
					err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr()
					mu.Lock()
					if err == nil {
						acked[v] = true
					} else {
						failed[v] = true
						if errors.Is(err, kerr.KafkaStorageError) {
							storageErrs++
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	// Idempotent records: seq i carries "i-<i>"; a failed send is retried
	// with the same sequence later.
	idemSeq := int32(0)
	idemAcked := map[int32]int64{} // seq -> offset
	sendIdem := func() (int16, error) {
		base, code, err := rp.send(ctx, fmt.Sprintf("i-%d-%s", idemSeq, strings.Repeat("w", 1000)), idemSeq)
		if err == nil && code == 0 {
			idemAcked[idemSeq] = base
			idemSeq++
		}
		return code, err
	}

	// Fill the disk: produce until storage errors have been seen for a
	// while (each producer sees several).
	deadline := time.Now().Add(90 * time.Second)
	produce(0, func() bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Now().After(deadline) {
			return true
		}
		return storageErrs >= 30
	})
	if storageErrs < 30 {
		t.Fatalf("the disk never filled: %d records acknowledged, %d storage errors, %d bytes free", len(acked), storageErrs, fs.Available())
	}
	var idemFullCode int16
	for i := 0; i < 40; i++ {
		code, err := sendIdem()
		if err != nil {
			t.Fatalf("idempotent produce: %v", err)
		}
		if code != 0 {
			idemFullCode = code
			break
		}
	}
	if idemFullCode != kerr.KafkaStorageError.Code {
		t.Fatalf("idempotent produce on a full disk: error code %d, want KAFKA_STORAGE_ERROR", idemFullCode)
	}
	t.Logf("disk full after %v: %d records acknowledged, %d failed (%d storage errors), idempotent seq %d failed; %d bytes free",
		time.Since(began), len(acked), len(failed), storageErrs, idemSeq, fs.Available())
	checkSegments(t, dataDir, "on a full disk")

	// Free space: writes resume (the failed idempotent sequence is retried
	// and must land once).
	fs.Free()
	testkit.CheckFor(t, 10*time.Second, func() error {
		code, err := sendIdem()
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(code)
	})
	for i := 0; i < 20; i++ {
		if code, err := sendIdem(); err != nil || code != 0 {
			t.Fatalf("idempotent produce after space was freed: %v %v", err, kerr.ErrorForCode(code))
		}
	}
	before := len(acked)
	produce(1, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= before+300
	})

	t.Logf("space freed, writes resumed: %v", time.Since(began))
	c.Kill(1)
	checkSegments(t, dataDir, "after kill -9")
	logBefore, _ := os.ReadFile(c.LogPath(1))
	c.Start(1)
	if t.Failed() {
		t.FailNow()
	}
	checkSegments(t, dataDir, "after the restart")
	// The restarted broker reports no corrupt data.
	logAll, _ := os.ReadFile(c.LogPath(1))
	sc := bufio.NewScanner(strings.NewReader(string(logAll[len(logBefore):])))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	recovered := 0
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		msg, _ := line["msg"].(string)
		if strings.Contains(strings.ToLower(sc.Text()), "corrupt") || line["level"] == "error" {
			t.Errorf("restarted broker reports: %s", sc.Text())
		}
		if strings.HasPrefix(msg, "recovered partition log") {
			recovered++
		}
	}
	if recovered == 0 {
		t.Errorf("the restarted broker logged no recovery line (was the shutdown unclean?)")
	}

	t.Logf("restarted: %v", time.Since(began))
	// Every acknowledged record exactly once.
	testkit.CheckFor(t, 30*time.Second, func() error { return c.allPartitionsLed(topic, parts, -1) })
	seen := map[string]int{}
	for _, pc := range readAllPartitions(t, seeds, topic, parts) {
		for _, v := range pc.values {
			seen[v]++
		}
	}
	for v := range acked {
		if seen[v] != 1 {
			t.Fatalf("acknowledged record %.10s... read %d times", v, seen[v])
		}
	}
	for v, n := range seen {
		if n != 1 || (!acked[v] && !failed[v]) {
			t.Fatalf("record %.10s... read %d times (acknowledged %v, failed %v)", v, n, acked[v], failed[v])
		}
	}
	t.Logf("read back: %v", time.Since(began))
	idemVals := readAllPartitions(t, seeds, idem, 1)[0].values
	if len(idemVals) != int(idemSeq) {
		t.Fatalf("idempotent partition holds %d records, %d were acknowledged", len(idemVals), idemSeq)
	}
	for i, v := range idemVals {
		if !strings.HasPrefix(v, fmt.Sprintf("i-%d-", i)) {
			t.Fatalf("idempotent partition offset %d holds %.12s..., want sequence %d", i, v, i)
		}
	}

	// The idempotent producer's resend of its last batch is a duplicate
	// (answered with the original offset); its next batch is accepted.
	last := idemSeq - 1
	testkit.CheckFor(t, 30*time.Second, func() error {
		base, code, err := rp.send(ctx, fmt.Sprintf("i-%d-%s", last, strings.Repeat("w", 1000)), last)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(code); err != nil {
			if kerr.IsRetriable(err) {
				return err
			}
			t.Fatalf("resending sequence %d after the restart: %v", last, err)
		}
		if base != idemAcked[last] {
			t.Fatalf("resent sequence %d answered with offset %d, want the original %d", last, base, idemAcked[last])
		}
		return nil
	})
	if code, err := sendIdem(); err != nil || code != 0 {
		t.Fatalf("the idempotent producer's next batch: %v %v", err, kerr.ErrorForCode(code))
	}
	if got := len(readAllPartitions(t, seeds, idem, 1)[0].values); got != int(idemSeq) {
		t.Fatalf("after the resend and one new batch the partition holds %d records, want %d", got, idemSeq)
	}
	t.Logf("after restart: %d acknowledged records read once each; %d recovery lines", len(acked), recovered)
}

// checkSegments runs log.Verify on every partition directory under
// dataDir: no torn or bad-CRC batch, index entries pointing at batches.
func checkSegments(t *testing.T, dataDir, when string) {
	t.Helper()
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if _, ok := log.ParsePartitionDir(e.Name()); !ok || !e.IsDir() {
			continue
		}
		n++
		if _, err := log.Verify(vfs.OS, filepath.Join(dataDir, e.Name())); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	if n == 0 {
		t.Fatalf("%s: no partition directories under %s", when, dataDir)
	}
}
