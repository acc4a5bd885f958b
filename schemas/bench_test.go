package schemas

import (
	"context"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// benchEvent is the 10-field record of testdata/event.avsc.
func benchEvent() map[string]any {
	return map[string]any{
		"timestamp":  int64(1718000000123),
		"host":       "web-17.example.internal",
		"service":    "checkout",
		"level":      "INFO",
		"message":    "GET /api/cart/42 200 served from cache",
		"latency_ms": 12.75,
		"status":     int32(200),
		"bytes":      int64(5123),
		"user":       map[string]any{"string": "alice"},
		"ok":         true,
	}
}

func benchSerde(b *testing.B) (*Serde, *Schema) {
	s := readSchema(b, "event.avsc")
	sd := NewSerde(nil)
	sd.Add(1, s)
	return sd, s
}

// BenchmarkSerialize: Serde.AppendEncode (cache lookup, framing, Avro) of
// the 10-field record.
func BenchmarkSerialize(b *testing.B) {
	sd, _ := benchSerde(b)
	v := benchEvent()
	ctx := context.Background()
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		out, err := sd.AppendEncode(ctx, buf[:0], 1, v)
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDeserialize: Serde.Decode (framing, cache lookup, Avro to
// native) of the 10-field record.
func BenchmarkDeserialize(b *testing.B) {
	sd, _ := benchSerde(b)
	ctx := context.Background()
	data, err := sd.Encode(ctx, 1, benchEvent())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := sd.Decode(ctx, data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDeserializeResolved: Serde.DecodeAs through a resolution plan
// (writer = event.avsc, reader adds a defaulted field and drops one).
func BenchmarkDeserializeResolved(b *testing.B) {
	sd, _ := benchSerde(b)
	reader := MustParse(`{"type":"record","name":"Event","namespace":"weir.bench","fields":[
	 {"name":"timestamp","type":"long"},{"name":"host","type":"string"},{"name":"service","type":"string"},
	 {"name":"level","type":{"type":"enum","name":"Level","symbols":["DEBUG","INFO","WARN","ERROR"]}},
	 {"name":"message","type":"string"},{"name":"latency_ms","type":"double"},{"name":"status","type":"long"},
	 {"name":"user","type":["null","string"],"default":null},{"name":"ok","type":"boolean"},
	 {"name":"region","type":"string","default":"eu-1"}]}`)
	ctx := context.Background()
	data, err := sd.Encode(ctx, 1, benchEvent())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := sd.DecodeAs(ctx, data, reader); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkGoavroBinaryFromNative is the baseline: goavro's encoder alone
// (no framing, no cache) on the same record.
func BenchmarkGoavroBinaryFromNative(b *testing.B) {
	s := readSchema(b, "event.avsc")
	gc, err := goavro.NewCodec(s.Text())
	if err != nil {
		b.Fatal(err)
	}
	v := benchEvent()
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		out, err := gc.BinaryFromNative(buf[:0], v)
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkGoavroNativeFromBinary is the baseline: goavro's decoder alone.
func BenchmarkGoavroNativeFromBinary(b *testing.B) {
	s := readSchema(b, "event.avsc")
	gc, err := goavro.NewCodec(s.Text())
	if err != nil {
		b.Fatal(err)
	}
	data, err := gc.BinaryFromNative(nil, benchEvent())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := gc.NativeFromBinary(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
