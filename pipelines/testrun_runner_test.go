package pipelines_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/pipelines"
	"weir/pipelines/codec"
	"weir/pipelines/expr"
	"weir/schemas"
)

const agreePipeline = `
topic "app_logs" {
  partitions = 1
  schema     = file("app.avsc")
}

topic "errors" {
  partitions = 1
}

topic "warnings" {
  partitions = 1
}

topic "levels" {
  partitions = 1
}

source "file" "app" {
  topic   = topic.app_logs
  include = ["${path.root}/in/*.log"]

  parse_json {
    field = "message"
  }
  parse_timestamp {
    field  = "time"
    target = "ts"
  }
  set {
    level   = upper(record.level)
    service = coalesce(record.svc, "checkout")
  }
  filter {
    condition = record.level != "DEBUG"
  }
}

stream "errors" {
  from       = [topic.app_logs]
  to         = topic.errors
  select_key = record.service
  filter {
    condition = record.level == "ERROR" || record.level == "WARN"
  }
  set {
    alert = "${record.service}: ${record.msg} (${record.n})"
  }
  route {
    topic     = topic.warnings
    condition = record.level == "WARN"
  }
}

stream "levels" {
  from     = [topic.app_logs]
  to       = topic.levels
  group_by = record.level
  window "tumbling" {
    size = "2s"
    emit = "final"
  }
  count {}
}
`

// TestTestBlocksAgreeWithRunner runs the same lines through weir run's
// Runner (a file source and a stream against a broker and a registry)
// and through test blocks (RunTests, no broker): every record the
// runner writes to the source's topic, its dead-letter topic and the
// stream's topics is what the test blocks say comes out, in the same
// order, with the same keys, timestamps, headers and decoded values.
func TestTestBlocksAgreeWithRunner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("app.avsc", appSchema)
	e.write("p.hcl", agreePipeline)
	lines := []string{
		`{"time":"2024-05-01T10:00:00.120Z","level":"info","msg":"order placed","n":1}`,
		`{"time":"2024-05-01T10:00:01Z","level":"debug","msg":"cache warm","n":2}`,
		`{"time":"2024-05-01T10:00:02Z","level":"error","svc":"pay","msg":"Zahlung fehlgeschlagen: Grüße → 東京","n":3}`,
		`{"time":"2024-05-01T10:00:03Z","level":"warn","msg":"slow","n":4}`,
		`{"level":"error","msg":"no time","n":5}`,
		`{"time":"2024-05-01T10:00:05Z","level":"error","msg":"n as text","n":"6"}`,
	}
	e.write("in/app.log", strings.Join(lines, "\n")+"\n")
	cfg := e.load()
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, SchemaRegistry: e.reg,
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), RestartBackoff: 200 * time.Millisecond,
		StateDir: t.TempDir(), StreamsCommitInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	if _, err := r.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	dlq := deadletter.Topic("app")
	want := map[string]int{"app_logs": 4, dlq: 1, "errors": 2, "warnings": 1, "levels": 3}
	got := map[string][]*kgo.Record{}
	testbroker.CheckFor(t, 30*time.Second, func() error {
		for topic, n := range want {
			got[topic] = e.b.ReadAll(topic)
			if len(got[topic]) != n {
				return fmt.Errorf("topic %s has %d records, want %d", topic, len(got[topic]), n)
			}
		}
		return nil
	})
	r.Stop()

	ctx := context.Background()
	rcl, err := sr.NewClient(sr.URLs(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	dec := &codec.Decoder{Serde: schemas.NewSerde(srclient.Source(rcl))}
	decode := func(v []byte) *expr.Object {
		o, err := dec.Decode(ctx, v, &expr.Object{})
		if err != nil {
			t.Fatalf("decoding %q: %v", v, err)
		}
		return o
	}

	// The test blocks: the lines for the source; for the stream, the
	// records the runner's source wrote, as objects.
	var tb strings.Builder
	tb.WriteString("test \"source\" {\n  target = source.app\n")
	for _, l := range lines {
		fmt.Fprintf(&tb, "  input {\n    value = %s\n  }\n", strconv.Quote(l))
	}
	for _, stream := range []string{"errors", "levels"} {
		fmt.Fprintf(&tb, "  no_output = true\n}\n\ntest %q {\n  target = stream.%s\n", stream, stream)
		for _, rec := range got["app_logs"] {
			fmt.Fprintf(&tb, "  input {\n    value     = %s\n    timestamp = %d\n  }\n", codec.AppendJSON(nil, decode(rec.Value)), rec.Timestamp.UnixMilli())
		}
	}
	tb.WriteString("  no_output = true\n}\n")
	e.write("tests.hcl", tb.String())
	tcfg, diags := pipelines.Load([]string{e.dir}, pipelines.Options{Tests: true})
	if diags.HasErrors() {
		t.Fatalf("%v\n%s", diags, tb.String())
	}
	res := pipelines.RunTests(ctx, tcfg)
	if len(res) != 3 {
		t.Fatalf("%d test results", len(res))
	}
	for _, tr := range res {
		byTopic := map[string][]pipelines.TestRecord{}
		for _, o := range tr.Outputs {
			byTopic[o.Topic] = append(byTopic[o.Topic], o)
		}
		topics := map[string][]string{"source": {"app_logs", dlq}, "errors": {"errors", "warnings"}, "levels": {"levels"}}[tr.Test.Name]
		n := 0
		for _, topic := range topics {
			h, rr := byTopic[topic], got[topic]
			n += len(h)
			if len(h) != len(rr) {
				t.Errorf("%s: topic %s: the test gives %d records, the runner wrote %d", tr.Test.Name, topic, len(h), len(rr))
				continue
			}
			for i := range h {
				a, b := &h[i], rr[i]
				if !bytes.Equal(a.Key, b.Key) || (a.Key == nil) != (b.Key == nil) {
					t.Errorf("%s: %s[%d]: key %q, runner %q", tr.Test.Name, topic, i, a.Key, b.Key)
				}
				if !a.Timestamp.IsZero() && !a.Timestamp.Equal(b.Timestamp) || a.Timestamp.IsZero() && topic != dlq {
					t.Errorf("%s: %s[%d]: timestamp %v, runner %v", tr.Test.Name, topic, i, a.Timestamp, b.Timestamp)
				}
				if a.DeadLetter != (topic == dlq) {
					t.Errorf("%s: %s[%d]: dead letter %v", tr.Test.Name, topic, i, a.DeadLetter)
				}
				if topic == dlq {
					var msg string
					for _, hd := range b.Headers {
						if hd.Key == deadletter.HeaderMessage {
							msg = string(hd.Value)
						}
					}
					if a.Error != msg || msg == "" {
						t.Errorf("%s: dead letter error %q, runner %q", tr.Test.Name, a.Error, msg)
					}
					continue
				}
				// The connectors runtime adds the source position header
				// (connectors.SourceHeader) when it produces; streams drop it.
				var rh []kgo.RecordHeader
				for _, hd := range b.Headers {
					if hd.Key != connectors.SourceHeader {
						rh = append(rh, hd)
					}
				}
				if len(a.Headers) != len(rh) {
					t.Errorf("%s: %s[%d]: headers %v, runner %v", tr.Test.Name, topic, i, a.Headers, b.Headers)
				}
				if a.Fields == nil || !expr.Equal(a.Fields, decode(b.Value)) {
					t.Errorf("%s: %s[%d]:\n test   %s\n runner %s", tr.Test.Name, topic, i, codec.AppendJSON(nil, a.Fields), codec.AppendJSON(nil, decode(b.Value)))
				}
				if topic != "app_logs" && !bytes.Equal(a.Value, b.Value) {
					t.Errorf("%s: %s[%d]: JSON value %s, runner %s", tr.Test.Name, topic, i, a.Value, b.Value)
				}
			}
		}
		if n != len(tr.Outputs) {
			t.Errorf("%s: %d outputs, %d on the compared topics: %+v", tr.Test.Name, len(tr.Outputs), n, tr.Outputs)
		}
	}
}
