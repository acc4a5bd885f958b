package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/kafkaclient"
)

// RoundTripMode is what one round trip of RoundTrip sends.
type RoundTripMode string

const (
	// RoundTripKgo produces one record with a kgo client (linger 0) and
	// waits for its acknowledgement before the next: the unloaded
	// single-record latency an application sees.
	RoundTripKgo RoundTripMode = "kgo"
	// RoundTripRawProduce sends a one-record Produce request on one raw
	// TCP connection and reads the response: the broker's share of the
	// kgo figure, without the client's goroutine hand-offs.
	RoundTripRawProduce RoundTripMode = "raw-produce"
	// RoundTripRawAPIVersions sends ApiVersions requests on one raw TCP
	// connection: loopback, scheduling and the broker's request path,
	// with no log append.
	RoundTripRawAPIVersions RoundTripMode = "raw-apiversions"
)

// RoundTripModes lists the modes in the order a full run measures them.
var RoundTripModes = []RoundTripMode{RoundTripKgo, RoundTripRawProduce, RoundTripRawAPIVersions}

// RoundTripConfig configures RoundTrip. Zero values mean the documented
// defaults.
type RoundTripConfig struct {
	Brokers    []string             // required
	Security   kafkaclient.Security // TLS and SASL, kgo mode only (zero: PLAINTEXT)
	Topic      string               // required for the produce modes; created with 1 partition if missing
	Mode       RoundTripMode        // default RoundTripKgo
	Records    int64                // measured round trips; default 10,000
	Warmup     int64                // round trips before measuring (connections, metadata); default 200
	RecordSize int                  // value bytes; default 100
	Acks       kafkaclient.Acks     // 1 or -1 (all); the zero value means 1 (acks=0 has no round trip)
	Interval   time.Duration        // pause between round trips; 0 = back to back
	Out        io.Writer            // summary line; nil discards
}

// RoundTripResult is what RoundTrip measured.
type RoundTripResult struct {
	Mode    RoundTripMode
	Count   int64
	Elapsed time.Duration
	Latency *Histogram // per round trip, nanoseconds
}

// Summary formats r as one line with the latency quantiles.
func (r RoundTripResult) Summary() string {
	h := r.Latency
	return fmt.Sprintf("%s: %d round trips, %.1f/sec, latency %.3f ms avg, %.3f ms 50th, %.3f ms 99th, %.3f ms 99.9th, %.3f ms max",
		r.Mode, r.Count, perSec(float64(r.Count), r.Elapsed), h.Mean()/1e6,
		ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max()))
}

// RoundTrip measures sequential request round trips with one request in
// flight, as cfg.Mode says: through kgo (the application's view) or over
// one raw connection (the broker's view, the baseline next to it).
// Produce modes write to partition 0 of cfg.Topic.
func RoundTrip(ctx context.Context, cfg RoundTripConfig) (RoundTripResult, error) {
	res := RoundTripResult{Mode: cfg.Mode, Latency: new(Histogram)}
	if len(cfg.Brokers) == 0 {
		return res, fmt.Errorf("%w: no brokers", ErrConfig)
	}
	if cfg.Mode == "" {
		cfg.Mode = RoundTripKgo
		res.Mode = cfg.Mode
	}
	if cfg.Records <= 0 {
		cfg.Records = 10_000
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = 200
	}
	if cfg.RecordSize <= 0 {
		cfg.RecordSize = 100
	}
	if cfg.Acks == 0 {
		cfg.Acks = 1
	}
	if cfg.Acks != 1 && cfg.Acks != -1 {
		return res, fmt.Errorf("%w: round trips need acks 1 or all, not %d", ErrConfig, cfg.Acks)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	var (
		once func() error
		stop func()
		err  error
	)
	switch cfg.Mode {
	case RoundTripKgo:
		once, stop, err = kgoRoundTrip(ctx, cfg)
	case RoundTripRawProduce, RoundTripRawAPIVersions:
		once, stop, err = rawRoundTrip(ctx, cfg)
	default:
		return res, fmt.Errorf("%w: unknown round-trip mode %q (want kgo, raw-produce or raw-apiversions)", ErrConfig, cfg.Mode)
	}
	if err != nil {
		return res, err
	}
	defer stop()
	for i := int64(0); i < cfg.Warmup; i++ {
		if err := once(); err != nil {
			return res, fmt.Errorf("%s round trip (warm-up): %w", cfg.Mode, err)
		}
	}
	start := time.Now()
	for i := int64(0); i < cfg.Records; i++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if cfg.Interval > 0 && i > 0 {
			time.Sleep(cfg.Interval)
		}
		t0 := time.Now()
		if err := once(); err != nil {
			return res, fmt.Errorf("%s round trip %d: %w", cfg.Mode, i, err)
		}
		res.Latency.RecordDuration(time.Since(t0))
		res.Count++
	}
	res.Elapsed = time.Since(start)
	fmt.Fprintln(cfg.Out, res.Summary())
	return res, nil
}

// kgoRoundTrip returns a function producing one record synchronously.
func kgoRoundTrip(ctx context.Context, cfg RoundTripConfig) (func() error, func(), error) {
	if cfg.Topic == "" {
		return nil, nil, fmt.Errorf("%w: no topic (set --topic)", ErrConfig)
	}
	if _, err := EnsureTopic(ctx, kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, cfg.Topic, 1, 0, cfg.Out); err != nil {
		return nil, nil, err
	}
	opts := append(kafkaclient.Producer(cfg.Acks, kgo.NoCompression()),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("producer client: %w", err)
	}
	value := make([]byte, cfg.RecordSize)
	once := func() error {
		return cl.ProduceSync(ctx, &kgo.Record{Value: value, Partition: 0}).FirstErr()
	}
	return once, cl.Close, nil
}

// rawRoundTrip dials partition 0's leader (or the first broker for
// ApiVersions) and returns a function sending one request and reading its
// response on that connection.
func rawRoundTrip(ctx context.Context, cfg RoundTripConfig) (func() error, func(), error) {
	if p := cfg.Security.Protocol; p != "" && p != kafkaclient.Plaintext {
		return nil, nil, fmt.Errorf("%w: mode %s speaks PLAINTEXT on a raw connection, not %s: use mode kgo", ErrConfig, cfg.Mode, p)
	}
	addr := cfg.Brokers[0]
	var req kmsg.Request
	if cfg.Mode == RoundTripRawProduce {
		if cfg.Topic == "" {
			return nil, nil, fmt.Errorf("%w: no topic (set --topic)", ErrConfig)
		}
		if _, err := EnsureTopic(ctx, kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, cfg.Topic, 1, 0, cfg.Out); err != nil {
			return nil, nil, err
		}
		var err error
		if addr, err = leaderOf(ctx, kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, cfg.Topic, 0); err != nil {
			return nil, nil, err
		}
		p := kmsg.NewProduceRequest()
		p.Version = 9
		p.Acks = int16(cfg.Acks)
		p.TimeoutMillis = 30_000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = cfg.Topic
		tp := kmsg.NewProduceRequestTopicPartition()
		tp.Partition = 0
		tp.Records = oneRecordBatch(make([]byte, cfg.RecordSize), time.Now().UnixMilli())
		t.Partitions = append(t.Partitions, tp)
		p.Topics = append(p.Topics, t)
		req = &p
	} else {
		a := kmsg.NewApiVersionsRequest()
		a.Version = 3
		a.ClientSoftwareName = "weir-bench"
		a.ClientSoftwareVersion = "1"
		req = &a
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("weir-bench"))
	br := bufio.NewReaderSize(nc, 64<<10)
	var (
		corr  int32
		frame []byte
		body  []byte
	)
	once := func() error {
		corr++
		// The batch is the same every time: the broker stamps offsets
		// into its own copy, and without a producer id nothing is
		// deduplicated.
		frame = f.AppendRequest(frame[:0], req, corr)
		if _, err := nc.Write(frame); err != nil {
			return err
		}
		var sz [4]byte
		if _, err := io.ReadFull(br, sz[:]); err != nil {
			return fmt.Errorf("reading response from %s: %w", addr, err)
		}
		n := int(binary.BigEndian.Uint32(sz[:]))
		if n < 4 || n > 64<<20 {
			return fmt.Errorf("response from %s: bad frame size %d", addr, n)
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("reading response from %s: %w", addr, err)
		}
		if got := int32(binary.BigEndian.Uint32(body)); got != corr {
			return fmt.Errorf("response from %s: correlation id %d, want %d", addr, got, corr)
		}
		return checkResponse(req, body[4:])
	}
	return once, func() { nc.Close() }, nil
}

// checkResponse decodes a response body (after the correlation id) and
// returns its first Kafka error.
func checkResponse(req kmsg.Request, b []byte) error {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(b) == 0 {
			return errors.New("response header truncated")
		}
		b = b[1:] // empty tagged fields
	}
	if err := resp.ReadFrom(b); err != nil {
		return fmt.Errorf("decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("produce to %s[%d]: %w", t.Topic, p.Partition, err)
				}
			}
		}
	case *kmsg.ApiVersionsResponse:
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// leaderOf returns the host:port of the leader of topic's partition.
func leaderOf(ctx context.Context, o kafkaclient.Options, topic string, partition int32) (string, error) {
	cl, err := kafkaclient.New(o)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("metadata for topic %q: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return "", fmt.Errorf("metadata for topic %q: %v", topic, td.Err)
	}
	pd, ok := td.Partitions[partition]
	if !ok || pd.Err != nil {
		return "", fmt.Errorf("metadata for topic %q partition %d: %v", topic, partition, pd.Err)
	}
	for _, b := range md.Brokers {
		if b.NodeID == pd.Leader {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), nil
		}
	}
	return "", fmt.Errorf("topic %q partition %d: leader %d not among the brokers", topic, partition, pd.Leader)
}

// oneRecordBatch encodes an uncompressed RecordBatch v2 holding one record
// with value and no key, producer id -1 (not idempotent).
func oneRecordBatch(value []byte, ts int64) []byte {
	rec := kmsg.Record{Key: nil, Value: value}
	body := rec.AppendTo(nil)
	// Length counts what follows it: the encoding with Length=0 minus the
	// one-byte varint 0.
	rec.Length = int32(len(body) - 1)
	recs := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(49 + len(recs)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      0,
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              recs,
	}
	b := rb.AppendTo(nil)
	// CRC32C covers attributes (byte 21) to the end; the CRC is at 17.
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
