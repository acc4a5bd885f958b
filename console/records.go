package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
	"weir/schemas"
)

// Record browser limits.
const (
	defaultLimit = 20
	maxLimit     = 200
	// keyScan is how many records per partition a key search reads,
	// back from the end.
	keyScan = 10000
	// showBytes bounds a key's or value's shown text.
	showBytes = 64 << 10
)

type recordsQuery struct {
	Partition string // "" all
	Offset    string
	Timestamp string
	Key       string
	Limit     int
}

type recordsData struct {
	Topic      string
	Partitions []int32
	Q          recordsQuery
	Mode       string // "latest", "offset", "timestamp", "key"
	Records    []recordRow
	Scanned    int64
}

type recordRow struct {
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       decoded
	Value     decoded
	Headers   []string
}

// decoded is a key or value as shown: its encoding, the text and a
// decoding problem, if any.
type decoded struct {
	Encoding string // "avro (schema 3)", "json", "text", "bytes", "null"
	Text     string
	Problem  string
}

// statusError carries the status a page answers with.
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return statusError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

// recordsPage: the record browser. By partition (or all) and one of:
// offset (from there on), timestamp (the first records at or after it),
// key (the records with that key among the last keyScan of each
// partition), or none (the latest records).
func (c *Console) recordsPage(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	title := "Records of " + topic
	qv := r.URL.Query()
	q := recordsQuery{Partition: strings.TrimSpace(qv.Get("partition")), Offset: strings.TrimSpace(qv.Get("offset")),
		Timestamp: strings.TrimSpace(qv.Get("timestamp")), Key: qv.Get("key"), Limit: defaultLimit}
	d := recordsData{Topic: topic, Q: q}
	if s := strings.TrimSpace(qv.Get("limit")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			c.render(w, r, "records", title, d, badInput("limit %q: want a number from 1 to %d", s, maxLimit))
			return
		}
		d.Q.Limit = n
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	err := c.browse(ctx, &d)
	var nt noTopic
	if errors.As(err, &nt) {
		c.notFound(w, r, title, err.Error())
		return
	}
	c.render(w, r, "records", title, d, err)
}

type noTopic struct{ topic string }

func (e noTopic) Error() string {
	return fmt.Sprintf("topic %q does not exist (deleted, or never created)", e.topic)
}

// browse fills d.Records as d.Q asks.
func (c *Console) browse(ctx context.Context, d *recordsData) error {
	md, err := c.adm.Metadata(ctx, d.Topic)
	if err != nil {
		return err
	}
	td, ok := md.Topics[d.Topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return noTopic{d.Topic}
	}
	if td.Err != nil {
		return fmt.Errorf("topic %s: %w", d.Topic, td.Err)
	}
	for p := range td.Partitions {
		d.Partitions = append(d.Partitions, p)
	}
	sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i] < d.Partitions[j] })
	parts := d.Partitions
	if d.Q.Partition != "" {
		n, err := strconv.ParseInt(d.Q.Partition, 10, 32)
		if _, ok := td.Partitions[int32(n)]; err != nil || !ok {
			return badInput("partition %q: %s has partitions 0 to %d", d.Q.Partition, d.Topic, len(td.Partitions)-1)
		}
		parts = []int32{int32(n)}
	}
	all := map[string][]int32{d.Topic: d.Partitions}
	starts, err := c.listOffsetsWith(ctx, topicMeta(md), atStart, all)
	if err != nil {
		return err
	}
	ends, err := c.listOffsetsWith(ctx, topicMeta(md), atEnd, all)
	if err != nil {
		return err
	}
	bounds := map[int32][2]int64{}
	for _, p := range parts {
		s, ok1 := starts.Lookup(d.Topic, p)
		e, ok2 := ends.Lookup(d.Topic, p)
		if errors.Is(s.Err, kerr.UnknownTopicOrPartition) || errors.Is(e.Err, kerr.UnknownTopicOrPartition) {
			return noTopic{d.Topic} // being deleted: metadata may still list it
		}
		if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
			return fmt.Errorf("offsets of %s partition %d: %w", d.Topic, p, errors.Join(s.Err, e.Err))
		}
		bounds[p] = [2]int64{s.Offset, e.Offset}
	}
	from := map[int32]int64{}
	limit := int64(d.Q.Limit)
	switch {
	case d.Q.Offset != "":
		d.Mode = "offset"
		off, err := strconv.ParseInt(d.Q.Offset, 10, 64)
		if err != nil || off < 0 {
			return badInput("offset %q: want a whole number from 0", d.Q.Offset)
		}
		for _, p := range parts {
			b := bounds[p]
			if len(parts) == 1 && (off < b[0] || off >= b[1]) {
				if b[0] == b[1] {
					return badInput("offset %d is out of range: partition %d of %s is empty (next offset %d)", off, p, d.Topic, b[1])
				}
				return badInput("offset %d is out of range: partition %d of %s holds offsets %d to %d", off, p, d.Topic, b[0], b[1]-1)
			}
			if off < b[1] {
				from[p] = max(off, b[0])
			}
		}
	case d.Q.Timestamp != "":
		d.Mode = "timestamp"
		ts, err := parseTimestamp(d.Q.Timestamp)
		if err != nil {
			return badInput("timestamp %q: %v", d.Q.Timestamp, err)
		}
		at, err := c.adm.ListOffsetsAfterMilli(ctx, ts.UnixMilli(), d.Topic)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if o, ok := at.Lookup(d.Topic, p); ok && o.Err == nil && o.Offset >= 0 && o.Offset < bounds[p][1] {
				from[p] = max(o.Offset, bounds[p][0])
			}
		}
	case d.Q.Key != "":
		d.Mode = "key"
		for _, p := range parts {
			b := bounds[p]
			if b[1] > b[0] {
				from[p] = max(b[0], b[1]-keyScan)
			}
		}
	default:
		d.Mode = "latest"
		for _, p := range parts {
			b := bounds[p]
			if b[1] > b[0] {
				from[p] = max(b[0], b[1]-limit)
			}
		}
	}
	recs, scanned, err := c.fetch(ctx, d.Topic, from, bounds, d.Mode, []byte(d.Q.Key), limit)
	d.Scanned = scanned
	for _, rec := range recs {
		d.Records = append(d.Records, c.row(ctx, rec))
	}
	return err
}

// fetch reads from each partition's offset in from up to its end (in
// bounds), keeping at most limit records per partition (for "key": the
// last limit with that key; for "latest": the last limit; otherwise the
// first limit).
func (c *Console) fetch(ctx context.Context, topic string, from map[int32]int64, bounds map[int32][2]int64, mode string, key []byte, limit int64) ([]*kgo.Record, int64, error) {
	if len(from) == 0 {
		return nil, 0, nil
	}
	offs := map[int32]kgo.Offset{}
	for p, o := range from {
		offs[p] = kgo.NewOffset().At(o)
	}
	cl, err := kafkaclient.New(c.cfg.Kafka, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchMaxWait(250*time.Millisecond), kgo.FetchMaxBytes(8<<20), kgo.FetchMaxPartitionBytes(2<<20))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	kept := map[int32][]*kgo.Record{}
	done := map[int32]bool{}
	var scanned int64
	for len(done) < len(from) {
		// A partition whose last records were compacted or aborted away
		// never shows its end-1: a poll that brings nothing within a
		// second and a half ends the reading.
		pctx, pcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		idle := pctx.Err() != nil && fs.NumRecords() == 0
		pcancel()
		if ctx.Err() != nil {
			return flatten(kept), scanned, fmt.Errorf("reading %s: stopped after %d records: %w", topic, scanned, ctx.Err())
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			case errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID):
				ferr = noTopic{topic}
			case ferr == nil:
				ferr = fmt.Errorf("reading %s partition %d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return flatten(kept), scanned, ferr
		}
		if idle {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			if done[r.Partition] {
				return
			}
			scanned++
			end := bounds[r.Partition][1]
			switch mode {
			case "key":
				if bytes.Equal(r.Key, key) {
					kept[r.Partition] = lastN(append(kept[r.Partition], r), limit)
				}
			case "latest":
				kept[r.Partition] = lastN(append(kept[r.Partition], r), limit)
			default:
				kept[r.Partition] = append(kept[r.Partition], r)
				if int64(len(kept[r.Partition])) >= limit {
					done[r.Partition] = true
				}
			}
			if r.Offset >= end-1 {
				done[r.Partition] = true
			}
		})
	}
	return flatten(kept), scanned, nil
}

func lastN(rs []*kgo.Record, n int64) []*kgo.Record {
	if int64(len(rs)) > n {
		return rs[int64(len(rs))-n:]
	}
	return rs
}

func flatten(m map[int32][]*kgo.Record) []*kgo.Record {
	var out []*kgo.Record
	for _, rs := range m {
		out = append(out, rs...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

func (c *Console) row(ctx context.Context, r *kgo.Record) recordRow {
	row := recordRow{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp,
		Key: c.decode(ctx, r.Key), Value: c.decode(ctx, r.Value)}
	for _, h := range r.Headers {
		row.Headers = append(row.Headers, h.Key+": "+c.decode(ctx, h.Value).Text)
	}
	return row
}

// decode shows b: Confluent-framed Avro through the registry, JSON,
// UTF-8 text, or hex.
func (c *Console) decode(ctx context.Context, b []byte) decoded {
	switch {
	case b == nil:
		return decoded{Encoding: "null"}
	case len(b) == 0:
		return decoded{Encoding: "empty"}
	case len(b) >= schemas.HeaderSize && b[0] == schemas.Magic && c.serde != nil:
		id, v, err := c.serde.Decode(ctx, b)
		if err != nil {
			return decoded{Encoding: fmt.Sprintf("avro (schema id %d)", id), Problem: "undecodable: " + err.Error(), Text: hexDump(b)}
		}
		codec, err := c.serde.Codec(ctx, id)
		if err == nil {
			var js []byte
			if js, err = schemas.AppendJSON(nil, codec.Schema, v); err == nil {
				return decoded{Encoding: fmt.Sprintf("avro (schema id %d)", id), Text: indentJSON(js)}
			}
		}
		return decoded{Encoding: fmt.Sprintf("avro (schema id %d)", id), Text: fmt.Sprint(v), Problem: err.Error()}
	case json.Valid(b) && len(bytes.TrimSpace(b)) > 0:
		return decoded{Encoding: "json", Text: clip(indentJSON(b))}
	case utf8.Valid(b):
		return decoded{Encoding: "text", Text: clip(string(b))}
	default:
		return decoded{Encoding: "bytes", Text: hexDump(b)}
	}
}

func indentJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return clip(out.String())
}

// clip bounds s to showBytes, cut at a rune boundary.
func clip(s string) string {
	if len(s) > showBytes {
		cut := showBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes in all)"
	}
	return s
}

func hexDump(b []byte) string {
	if len(b) > 1024 {
		return hex.Dump(b[:1024]) + "… (" + strconv.Itoa(len(b)) + " bytes in all)"
	}
	return hex.Dump(b)
}

// parseTimestamp reads RFC 3339, an <input type=datetime-local> value
// (UTC) or milliseconds since the epoch.
func parseTimestamp(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("want RFC 3339 (2026-12-02T13:00:00Z), a date and time in UTC (2026-12-02T13:00) or milliseconds since the epoch")
}
