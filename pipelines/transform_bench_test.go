package pipelines

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
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

// BenchmarkTransform measures one record through decode (the file
// source's JSON event), parse JSON → set 2 fields → filter, and JSON
// encode: the per-record cost transforms add to a pipeline.
func BenchmarkTransform(b *testing.B) {
	cfg, diags := LoadSources([]SourceFile{{Name: "b.hcl", Src: []byte(chainBench)}}, ".", Options{})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	tr := &transformer{chain: cfg.Streams[0].Steps, dec: &decoder{}, encs: map[string]*topicEncoder{}, defTopic: "out", log: zap.NewNop()}
	val := []byte(`{"timestamp":1714557600000,"host":"vm","file":"/var/log/app.log","offset":1234,"message":"{\"time\":\"2024-05-01T10:00:00.123Z\",\"level\":\"info\",\"msg\":\"request served in 35ms\",\"user\":\"u12\",\"n\":42}"}`)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(val)))
	for i := 0; i < b.N; i++ {
		res := tr.apply(ctx, nil, val, time.Time{})
		if res.outcome != Keep || res.err != nil {
			b.Fatal(res.err)
		}
	}
	_ = fmt.Sprint()
}
