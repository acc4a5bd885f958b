package pipelines

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/internal/deadletter"
	"weir/pipelines/codec"
	"weir/pipelines/expr"
	"weir/schemas"
)

// TestRecord is one record that came out of a test's target.
type TestRecord struct {
	Topic     string
	Key       []byte
	Value     []byte
	Headers   []kgo.RecordHeader
	Timestamp time.Time
	// DeadLetter: the record went to the dead-letter topic with Error.
	DeadLetter bool
	Error      string
	// Fields is Value decoded as the pipeline decodes it (nil for a
	// tombstone or an undecodable value, then DecodeErr says why).
	Fields    *expr.Object
	DecodeErr error
}

// TestResult is the outcome of one test: the records that came out and
// the failed expectations, each at its file:line:col (none: passed).
type TestResult struct {
	Test    *Test
	Outputs []TestRecord
	Diags   hcl.Diagnostics
}

// Passed reports whether every expectation held.
func (r *TestResult) Passed() bool { return !r.Diags.HasErrors() }

// testHarness holds what the runner would hold for cfg: the topics'
// encoders and a decoder, with the declared Avro schemas under local ids
// instead of a registry's.
type testHarness struct {
	cfg  *Config
	dec  *codec.Decoder
	encs map[string]*codec.Encoder
}

func newTestHarness(cfg *Config) *testHarness {
	h := &testHarness{cfg: cfg, encs: map[string]*codec.Encoder{}}
	byID := map[int32]string{}
	for i, t := range cfg.Topics {
		enc := codec.JSON
		if t.Schema != nil {
			id := int32(i + 1)
			byID[id] = t.SchemaText
			enc = codec.NewAvroEncoder(id, t.Schema)
		}
		h.encs[t.Name] = enc
	}
	h.dec = &codec.Decoder{Serde: schemas.NewSerde(schemas.SourceFunc(func(_ context.Context, id int32) (string, error) {
		if s, ok := byID[id]; ok {
			return s, nil
		}
		return "", fmt.Errorf("%w: %d (not a schema of a declared topic)", schemas.ErrUnknownSchema, id)
	}))}
	return h
}

// RunTests runs cfg's test blocks (Load with Options.Tests) without a
// broker: each test's inputs go through the same transformer the runner
// builds for its target (decoding, steps, select_key, encoding for the
// destination topic, dead letters), and what comes out is checked
// against its output blocks.
func RunTests(ctx context.Context, cfg *Config) []TestResult {
	h := newTestHarness(cfg)
	out := make([]TestResult, 0, len(cfg.Tests))
	for _, t := range cfg.Tests {
		res := TestResult{Test: t}
		recs, diags := h.run(ctx, t)
		h.decodeOutputs(ctx, recs)
		res.Outputs = recs
		res.Diags = diags
		if !diags.HasErrors() {
			res.Diags = append(res.Diags, checkTest(t, recs)...)
		}
		out = append(out, res)
	}
	return out
}

func (h *testHarness) transformer(chain *Chain, defTopic string) *transformer {
	return &transformer{chain: chain, dec: h.dec, encs: h.encs, defTopic: defTopic, log: zap.NewNop()}
}

// encodeInput makes an input's value bytes as they would sit on topic.
func (h *testHarness) encodeInput(in *TestInput, topic string) ([]byte, hcl.Diagnostics) {
	switch v := in.Value.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case *expr.Object:
		b, err := h.encs[topic].Encode(nil, v)
		if err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid test input",
				Detail: fmt.Sprintf("The value cannot be written to topic %s as its records are: %v.", topic, err), Subject: in.ValueRange.Ptr()}}
		}
		return b, nil
	}
	return nil, nil
}

func (h *testHarness) run(ctx context.Context, t *Test) ([]TestRecord, hcl.Diagnostics) {
	switch {
	case t.source != nil:
		return h.runSource(ctx, t)
	case t.stream != nil && t.stream.Stateful():
		return h.runAggregating(ctx, t)
	case t.stream != nil:
		return h.runStream(ctx, t)
	default:
		return h.runTransform(ctx, t)
	}
}

// lineFields is an input as a source's event (connectors.RawField, as
// the file source hands its lines to transforms): a string value is the
// message field, an object value the event's fields.
func lineFields(in *TestInput) []connectors.RawField {
	switch v := in.Value.(type) {
	case string:
		return []connectors.RawField{{Name: "message", Value: []byte(v)}}
	case *expr.Object:
		fs := make([]connectors.RawField, v.Len())
		for i, k := range v.Keys {
			fs[i] = connectors.RawField{Name: k, Value: v.Vals[i]}
		}
		return fs
	}
	return []connectors.RawField{}
}

// lineValue is the record value a source's event carries beside its
// fields: the line, or the event's JSON (what a dead letter holds).
func lineValue(in *TestInput) []byte {
	switch v := in.Value.(type) {
	case string:
		return []byte(v)
	case *expr.Object:
		return codec.AppendJSON(nil, v)
	}
	return nil
}

// runSource hands the inputs to the source's transformSource as its
// connector's events (lineFields).
func (h *testHarness) runSource(ctx context.Context, t *Test) ([]TestRecord, hcl.Diagnostics) {
	s := t.source
	recs := make([]connectors.SourceRecord, 0, len(t.Inputs))
	for _, in := range t.Inputs {
		recs = append(recs, connectors.SourceRecord{Topic: in.Topic, Key: in.Key, Value: lineValue(in), Headers: in.Headers,
			Timestamp: in.Timestamp, Fields: lineFields(in)})
	}
	var got []connectors.SourceRecord
	if s.Steps.Len() == 0 {
		// The runner produces a source's records as they are: the
		// event's JSON here.
		for i := range recs {
			o := rawObject(&expr.Object{}, recs[i].Fields)
			recs[i].Value, recs[i].Fields = codec.AppendJSON(nil, o), nil
		}
		got = recs
	} else {
		ts := &transformSource{inner: &testSource{recs: recs}, t: h.transformer(s.Steps, s.Topic), dlq: deadletter.Topic(s.Name)}
		var err error
		if got, err = ts.fetch(ctx, nil); err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Test failed to run", Detail: err.Error(), Subject: t.Range.Ptr()}}
		}
	}
	out := make([]TestRecord, 0, len(got))
	for _, r := range got {
		tr := TestRecord{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		if tr.Topic == "" {
			tr.Topic = s.Topic
		}
		if tr.Topic == deadletter.Topic(s.Name) {
			tr.DeadLetter = true
			for _, hd := range r.Headers {
				if hd.Key == errHeader {
					tr.Error = string(hd.Value)
				}
			}
		}
		out = append(out, tr)
	}
	return out, nil
}

// testSource is the connector of a source under test: it returns the
// test's input records from one Poll.
type testSource struct{ recs []connectors.SourceRecord }

func (s *testSource) Open(context.Context, connectors.SourceContext, map[string][]byte) error {
	return nil
}

func (s *testSource) Poll(_ context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	buf = append(buf, s.recs...)
	s.recs = nil
	return buf, nil
}

func (s *testSource) Close() error { return nil }

// runStream writes the inputs, encoded as their from topic stores
// values, to the stream's streamSink, which produces its results and
// dead letters into the test's collector.
func (h *testHarness) runStream(ctx context.Context, t *Test) ([]TestRecord, hcl.Diagnostics) {
	s := t.stream
	var diags hcl.Diagnostics
	rs := make([]*kgo.Record, 0, len(t.Inputs))
	for _, in := range t.Inputs {
		topic := in.Topic
		if topic == "" {
			topic = s.From[0]
		}
		v, d := h.encodeInput(in, topic)
		diags = append(diags, d...)
		ts := in.Timestamp
		rs = append(rs, &kgo.Record{Topic: topic, Key: in.Key, Value: v, Headers: in.Headers, Timestamp: ts})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	tr := h.transformer(s.Steps, s.To)
	tr.keyFn = s.keyFn
	col := &testCollector{name: s.Name}
	sink := &streamSink{t: tr, txn: col, sc: col}
	if err := sink.Write(ctx, rs); err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Test failed to run", Detail: err.Error(), Subject: t.Range.Ptr()}}
	}
	return col.out, nil
}

// dlqName names the dead-letter topic of a transform test: the
// transform's (the first one's of a list); a component using it has its
// own.
func (t *Test) dlqName() string {
	name := strings.TrimPrefix(strings.Trim(t.Target, "[]"), "transform.")
	name, _, _ = strings.Cut(name, ",")
	return name
}

// testCollector receives a stream's results (as its transactional
// producer) and dead letters (as its sink context), in order.
type testCollector struct {
	name string
	out  []TestRecord
}

func (c *testCollector) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	c.out = append(c.out, TestRecord{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
	promise(r, nil)
}

func (c *testCollector) Name() string                 { return c.name }
func (c *testCollector) Logger() *zap.Logger          { return zap.NewNop() }
func (c *testCollector) Metrics() *connectors.Metrics { return nil }
func (c *testCollector) DeadLetter(r *kgo.Record, err error) {
	msg := strings.TrimPrefix(err.Error(), connectors.ErrBadRecord.Error()+": ")
	c.out = append(c.out, TestRecord{Topic: deadletter.Topic(c.name), Key: r.Key, Value: r.Value, Headers: r.Headers,
		Timestamp: r.Timestamp, DeadLetter: true, Error: msg})
}

// runTransform runs a transform block's steps alone over events as a
// source hands them (lineFields); results are JSON (or a route's
// topic's format).
func (h *testHarness) runTransform(ctx context.Context, t *Test) ([]TestRecord, hcl.Diagnostics) {
	ins := make([]input, len(t.Inputs))
	for i, in := range t.Inputs {
		ins[i] = input{key: in.Key, ts: in.Timestamp, fields: lineFields(in)}
	}
	tr := h.transformer(t.transform, "")
	res := tr.applyAll(ctx, nil, len(ins), func(i int, r *input) { *r = ins[i] })
	var out []TestRecord
	for i, r := range res {
		in := t.Inputs[i]
		switch r.outcome {
		case Drop:
		case DeadLetter:
			msg := "dead-lettered by a transform"
			if r.err != nil {
				msg = r.err.Error()
			}
			out = append(out, TestRecord{Topic: deadletter.Topic(t.dlqName()), Key: in.Key, Value: lineValue(in),
				Headers: in.Headers, Timestamp: in.Timestamp, DeadLetter: true, Error: msg})
		default:
			ts := r.ts
			if ts.IsZero() {
				ts = in.Timestamp
			}
			out = append(out, TestRecord{Topic: r.topic, Key: r.key, Value: r.value, Headers: in.Headers, Timestamp: ts})
		}
	}
	return out, nil
}

// decodeOutputs reads each record's value as the pipeline's next
// consumer would (the same Decoder).
func (h *testHarness) decodeOutputs(ctx context.Context, recs []TestRecord) {
	for i := range recs {
		r := &recs[i]
		if r.Value == nil {
			continue
		}
		o, err := h.dec.Decode(ctx, r.Value, &expr.Object{})
		if err != nil {
			r.DecodeErr = err
			continue
		}
		r.Fields = o
	}
}
