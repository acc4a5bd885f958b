package log

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log/vfs"
)

// rec is a test record; a nil Value is a tombstone.
type rec struct {
	Key, Value []byte
	TsDelta    int64
}

// encodeRecord encodes a kmsg.Record with its correct length prefix.
func encodeRecord(r kmsg.Record) []byte {
	r.Length = 0
	body := r.AppendTo(nil)
	r.Length = int32(len(body) - 1) // varint(0) is one byte
	return r.AppendTo(nil)
}

// buildBatch builds a RecordBatch v2 with kmsg, CRC set.
func buildBatch(t testing.TB, firstTs int64, codec int8, recs []rec) []byte {
	t.Helper()
	var raw []byte
	maxTs := firstTs
	for i, r := range recs {
		raw = append(raw, encodeRecord(kmsg.Record{TimestampDelta64: r.TsDelta, OffsetDelta: int32(i), Key: r.Key, Value: r.Value})...)
		maxTs = max(maxTs, firstTs+r.TsDelta)
	}
	if codec != CodecNone {
		c, err := compress(codec, raw)
		if err != nil {
			t.Fatal(err)
		}
		raw = c
	}
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: firstTs, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(len(recs)), Records: raw,
	}
	rb.Length = int32(BatchHeaderSize - LengthFieldEnd + len(raw))
	b := rb.AppendTo(nil)
	setCRC(b)
	return b
}

// valueBatch builds n records of valueSize bytes each, timestamps ts..ts+n-1.
func valueBatch(t testing.TB, n, valueSize int, ts int64) []byte {
	t.Helper()
	recs := make([]rec, n)
	for i := range recs {
		v := make([]byte, valueSize)
		binary.BigEndian.PutUint32(v, uint32(i))
		recs[i] = rec{Value: v, TsDelta: int64(i)}
	}
	return buildBatch(t, ts, CodecNone, recs)
}

// keyBatch builds one record per key (value "k=v@tag"), nil value for tombstones.
func keyBatch(t testing.TB, ts int64, kv ...string) []byte {
	t.Helper()
	var recs []rec
	for i := 0; i+1 < len(kv); i += 2 {
		r := rec{Key: []byte(kv[i])}
		if kv[i+1] != "<nil>" {
			r.Value = []byte(kv[i+1])
		}
		recs = append(recs, r)
	}
	return buildBatch(t, ts, CodecNone, recs)
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *fakeClock          { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }
func (c *fakeClock) Ms() int64      { return c.Now().UnixMilli() }
func testOpts(c *fakeClock) Options { return Options{Now: c.Now} }
func mustOpen(t testing.TB, fs vfs.FS, dir string, cfg Config, opts Options) *Log {
	t.Helper()
	l, err := Open(fs, dir, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte) AppendInfo {
	t.Helper()
	info, err := l.Append(b, 1)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// readAll reads every batch from offset from to the end through Read,
// checking each batch's CRC and that offsets increase.
func readAll(t testing.TB, l *Log, from int64) []BatchHeader {
	t.Helper()
	var out []BatchHeader
	next := from
	for next < l.EndOffset() {
		s, err := l.Read(next, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatalf("read %d: %v", next, err)
		}
		b, err := s.Bytes()
		s.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 {
			h, err := ParseBatch(b)
			if err != nil {
				t.Fatalf("read from %d: %v", next, err)
			}
			if len(out) > 0 && h.BaseOffset <= out[len(out)-1].LastOffset() {
				t.Fatalf("offsets not increasing: %d after %d", h.BaseOffset, out[len(out)-1].LastOffset())
			}
			out = append(out, h)
			b = b[h.Size():]
			next = h.LastOffset() + 1
		}
	}
	return out
}

var errNotYet = errors.New("not yet")
