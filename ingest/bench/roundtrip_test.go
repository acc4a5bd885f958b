package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
)

func TestOneRecordBatchDecodes(t *testing.T) {
	value := []byte("hello, round trip")
	b := oneRecordBatch(value, 1234)
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if int(rb.Length) != len(b)-12 || rb.Magic != 2 || rb.NumRecords != 1 || rb.FirstTimestamp != 1234 || rb.ProducerID != -1 {
		t.Fatalf("batch header %+v (encoded %d bytes)", rb, len(b))
	}
	if want := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(rb.CRC) != want || binary.BigEndian.Uint32(b[17:]) != want {
		t.Fatalf("crc %x, want %x", uint32(rb.CRC), want)
	}
	var rec kmsg.Record
	if err := rec.ReadFrom(rb.Records); err != nil {
		t.Fatal(err)
	}
	if rec.Key != nil || !bytes.Equal(rec.Value, value) || int(rec.Length) != len(rb.Records)-1 {
		t.Fatalf("record %+v", rec)
	}
}

// Every mode completes against a real Kafka implementation, and the raw
// and kgo produce modes store exactly the records they sent.
func TestRoundTripModes(t *testing.T) {
	brokers := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out testkit.Buffer
	for _, m := range RoundTripModes {
		r, err := RoundTrip(ctx, RoundTripConfig{Brokers: brokers, Topic: "rt", Mode: m, Records: 300, Warmup: 20, RecordSize: 10, Out: &out})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if r.Count != 300 || r.Latency.Count() != 300 || r.Latency.Quantile(0.5) <= 0 || r.Elapsed <= 0 {
			t.Fatalf("%s: result %+v, %d latencies", m, r, r.Latency.Count())
		}
	}
	for _, m := range RoundTripModes {
		if !strings.Contains(out.String(), string(m)+": 300 round trips") {
			t.Fatalf("summary of %s missing:\n%s", m, out.String())
		}
	}
	// kgo and raw-produce each wrote warm-up + measured records of 10 zero bytes.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("rt"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for n < 640 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 640 records: %v", n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition != 0 || !bytes.Equal(r.Value, make([]byte, 10)) {
				t.Fatalf("record %d: partition %d value %x", n, r.Partition, r.Value)
			}
			n++
		})
	}
}

func TestRoundTripRejects(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []RoundTripConfig{
		{},
		{Brokers: []string{"127.0.0.1:1"}, Mode: "bogus"},
		{Brokers: []string{"127.0.0.1:1"}, Mode: RoundTripKgo, Acks: 2},
	} {
		if _, err := RoundTrip(ctx, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("RoundTrip(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}
