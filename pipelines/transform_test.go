package pipelines

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"weir/connectors"
	"weir/connectors/file"
	"weir/pipelines/codec"
)

// testTransformer compiles the steps of one stream block.
func testTransformer(t testing.TB, steps string) *transformer {
	t.Helper()
	src := "topic \"t\" {}\nstream \"s\" {\n  from = [topic.t]\n  to   = \"out\"\n" + steps + "\n}\n"
	cfg, diags := LoadSources([]SourceFile{{Name: "t.hcl", Src: []byte(src)}}, ".", Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return &transformer{chain: cfg.Streams[0].Steps, dec: &codec.Decoder{}, encs: map[string]*codec.Encoder{}, defTopic: "out", log: zap.NewNop()}
}

// fileInputs returns line as a file source in raw mode hands it over and
// as the JSON event it writes otherwise.
func fileInputs(line string, offset int64) (raw, event input) {
	ev := file.Event{Time: time.UnixMilli(1714557600000), Host: "vm", File: "/var/log/app.log", Offset: offset, Message: []byte(line)}
	fields := []connectors.RawField{{Name: "timestamp", Value: int64(1714557600000)}, {Name: "host", Value: "vm"},
		{Name: "file", Value: "/var/log/app.log"}, {Name: "offset", Value: offset}, {Name: "message", Value: []byte(line)}}
	return input{value: []byte(line), fields: fields}, input{value: file.JSONEncoder{}.Append(nil, &ev)}
}

const metaJSON = `"timestamp":1714557600000,"host":"vm","file":"/var/log/app.log","offset":7`

// TestTransformRawAndEventAgree runs chains over lines handed over raw
// and as the file source's JSON event: both give the same result, the
// expected one.
func TestTransformRawAndEventAgree(t *testing.T) {
	t.Parallel()
	const merge = `parse_json {
    field        = "message"
    remove_field = true
  }
  set {
    service = "checkout"
    level   = upper(record.level)
  }
  filter {
    condition = record.level != "TRACE"
  }`
	cases := []struct {
		name, steps, line string
		want              string // "" when dropped
		wantErr           string
	}{
		{"merge", merge, `{"level":"info","msg":"a \"quoted\" \\ word","n":42}`,
			`{` + metaJSON + `,"level":"INFO","msg":"a \"quoted\" \\ word","n":42,"service":"checkout"}`, ""},
		{"filtered", merge, `{"level":"trace"}`, "", ""},
		// Members replace fields of their name, the last duplicate wins,
		// and a "message" member survives the removal of the field.
		{"duplicates", merge, `{"host":"other","a":1,"a":2,"message":"inner","level":"warn"}`,
			`{"timestamp":1714557600000,"host":"other","file":"/var/log/app.log","offset":7,"a":2,"message":"inner","level":"WARN","service":"checkout"}`, ""},
		{"keep_field", "parse_json {\n field = \"message\"\n}", `{"x":"y"}`,
			`{` + metaJSON + `,"message":"{\"x\":\"y\"}","x":"y"}`, ""},
		// A line that is not JSON leaves the event as it was (on_error
		// keep) and the next steps still run (set fails too: upper(null)).
		{"not_json", merge, `{"level":"info", broken`,
			`{` + metaJSON + `,"message":"{\"level\":\"info\", broken"}`, "malformed JSON"},
		{"not_object", merge, `[1,2]`,
			`{` + metaJSON + `,"message":"[1,2]"}`, "holds a JSON list, not an object"},
		{"target", "parse_json {\n field = \"message\"\n target = \"j\"\n remove_field = true\n}", `{"a":[1,{"b":null}],"u":"\u00e9\ud83d\ude00"}`,
			`{` + metaJSON + `,"j":{"a":[1,{"b":null}],"u":"é😀"}}`, ""},
		{"unicode", merge, `{"level":"info","msg":"héllo wörld"}`,
			`{` + metaJSON + `,"level":"INFO","msg":"héllo wörld","service":"checkout"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := testTransformer(t, c.steps)
			raw, event := fileInputs(c.line, 7)
			for _, in := range []input{raw, event} {
				res := tr.apply(context.Background(), &in, &scratch{})
				if c.want == "" {
					if res.outcome != Drop {
						t.Fatalf("outcome %v (%s), want Drop", res.outcome, res.value)
					}
					continue
				}
				if res.outcome != Keep || string(res.value) != c.want {
					t.Fatalf("outcome %v, value\n %s\nwant\n %s", res.outcome, res.value, c.want)
				}
				if c.wantErr == "" && res.err != nil || c.wantErr != "" && (res.err == nil || !strings.Contains(res.err.Error(), c.wantErr)) {
					t.Fatalf("error %v, want one containing %q", res.err, c.wantErr)
				}
			}
		})
	}
}

// TestTransformScratchReuse applies many records with one scratch and
// checks every result afterwards: values cut from the output slab are
// never overwritten, and no field leaks from one record to the next.
func TestTransformScratchReuse(t *testing.T) {
	t.Parallel()
	tr := testTransformer(t, `parse_json {
    field        = "message"
    remove_field = true
  }
  set {
    k = "v${record.n}"
  }`)
	sc := &scratch{}
	var want []string
	var kept [][]byte
	for i := 0; i < 5000; i++ {
		line := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", i%300))
		if i%7 == 0 {
			line = fmt.Sprintf(`{"n":%d,"only7":true}`, i)
		}
		raw, _ := fileInputs(line, int64(i))
		res := tr.apply(context.Background(), &raw, sc)
		if res.outcome != Keep || res.err != nil {
			t.Fatalf("record %d: %v %v", i, res.outcome, res.err)
		}
		kept = append(kept, res.value)
		want = append(want, string(tr.apply(context.Background(), &raw, &scratch{}).value))
	}
	for i, v := range kept {
		if string(v) != want[i] {
			t.Fatalf("record %d: value became %s, want %s", i, v, want[i])
		}
	}
	if !strings.Contains(want[7], `"only7":true`) || strings.Contains(want[8], "only7") {
		t.Fatalf("fields leak between records: %s / %s", want[7], want[8])
	}
}

// fakeSource emits batches of numbered records; a batch may fail once.
type fakeSource struct {
	next, total int
	batch       int
	failAt      int // Poll number that returns a retriable error (0: none)
	polls       atomic.Int32
	closed      atomic.Bool
}

func (f *fakeSource) Open(context.Context, connectors.SourceContext, map[string][]byte) error {
	return nil
}

func (f *fakeSource) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	if f.closed.Load() {
		panic("Poll after Close")
	}
	n := f.polls.Add(1)
	if int(n) == f.failAt {
		return buf, fmt.Errorf("%w: flaky", connectors.ErrRetriable)
	}
	if f.next >= f.total {
		<-ctx.Done()
		return buf, nil
	}
	for i := 0; i < f.batch && f.next < f.total; i++ {
		line := fmt.Sprintf(`{"n":%d}`, f.next)
		raw, _ := fileInputs(line, int64(f.next))
		buf = append(buf, connectors.SourceRecord{Value: raw.value, Fields: raw.fields, SourcePartition: "p", Position: []byte(fmt.Sprint(f.next))})
		f.next++
	}
	return buf, nil
}

func (f *fakeSource) Close() error { f.closed.Store(true); return nil }

// TestTransformSourcePrefetch polls a transformSource as the runtime
// does: records arrive once each, in order, with their positions,
// filtered ones left out; a retriable error reaches the caller; Close
// stops the prefetching goroutine before closing the inner source.
func TestTransformSourcePrefetch(t *testing.T) {
	t.Parallel()
	inner := &fakeSource{total: 3000, batch: 700, failAt: 3}
	tr := testTransformer(t, `parse_json {
    field        = "message"
    remove_field = true
  }
  filter {
    condition = record.n % 3 != 0
  }`)
	s := &transformSource{inner: inner, t: tr, dlq: "dlq"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Open(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	var got []connectors.SourceRecord
	retriable := 0
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < 2000 && time.Now().Before(deadline) {
		out, err := s.Poll(ctx, nil)
		if err != nil {
			if !errors.Is(err, connectors.ErrRetriable) {
				t.Fatal(err)
			}
			retriable++
		}
		got = append(got, out...)
	}
	if retriable != 1 {
		t.Fatalf("%d retriable errors, want 1", retriable)
	}
	if len(got) != 2000 {
		t.Fatalf("%d records, want 2000", len(got))
	}
	i := 0
	for n := 0; n < 3000; n++ {
		if n%3 == 0 {
			continue
		}
		r := got[i]
		want := fmt.Sprintf(`{"timestamp":1714557600000,"host":"vm","file":"/var/log/app.log","offset":%d,"n":%d}`, n, n)
		if string(r.Value) != want || string(r.Position) != fmt.Sprint(n) || r.Topic != "out" || r.Fields != nil {
			t.Fatalf("record %d: %+v, want value %s at position %d", i, r, want, n)
		}
		i++
	}
	// A fetch is running (the inner source waits for more lines): Close
	// stops it before closing the inner source (fakeSource panics on a
	// Poll after Close).
	cancel()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !inner.closed.Load() {
		t.Fatal("inner source not closed")
	}
}
