package pipelines

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"weir/connectors"
	"weir/pipelines/codec"
)

const chainBench = `
topic "t" {}
stream "s" {
  from = [topic.t]
  to   = "out"
  parse_json {
    field        = "message"
    remove_field = true
  }
  set {
    service = "checkout"
    level   = upper(record.level)
  }
  filter {
    condition = record.level != "TRACE"
  }
}
`

// BenchmarkTransform measures one record through parse JSON → set 2
// fields → filter and JSON encode: the per-record cost transforms add to
// a pipeline. raw is what a file source hands over in raw mode (the line
// and its event fields, connectors.RawSource); json_event decodes the
// file source's JSON event first (sources without raw mode, streams).
func BenchmarkTransform(b *testing.B) {
	cfg, diags := LoadSources([]SourceFile{{Name: "b.hcl", Src: []byte(chainBench)}}, ".", Options{})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	tr := &transformer{chain: cfg.Streams[0].Steps, dec: &codec.Decoder{}, encs: map[string]*codec.Encoder{}, defTopic: "out", log: zap.NewNop()}
	line := []byte(`{"time":"2024-05-01T10:00:00.123Z","level":"info","msg":"request served in 35ms","user":"u12","n":42}`)
	event := []byte(`{"timestamp":1714557600000,"host":"vm","file":"/var/log/app.log","offset":1234,"message":"{\"time\":\"2024-05-01T10:00:00.123Z\",\"level\":\"info\",\"msg\":\"request served in 35ms\",\"user\":\"u12\",\"n\":42}"}`)
	raw := []connectors.RawField{{Name: "timestamp", Value: int64(1714557600000)}, {Name: "host", Value: "vm"},
		{Name: "file", Value: "/var/log/app.log"}, {Name: "offset", Value: int64(1234)}, {Name: "message", Value: line}}
	want := `{"timestamp":1714557600000,"host":"vm","file":"/var/log/app.log","offset":1234,"time":"2024-05-01T10:00:00.123Z","level":"INFO","msg":"request served in 35ms","user":"u12","n":42,"service":"checkout"}`
	for _, bc := range []struct {
		name string
		in   input
	}{{"raw", input{value: line, fields: raw}}, {"json_event", input{value: event}}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			sc := &scratch{}
			if res := tr.apply(ctx, &bc.in, sc); string(res.value) != want {
				b.Fatalf("result %s, want %s", res.value, want)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for i := 0; i < b.N; i++ {
				res := tr.apply(ctx, &bc.in, sc)
				if res.outcome != Keep || res.err != nil {
					b.Fatal(res.err)
				}
			}
		})
	}
}
