package pipelines

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"weir/internal/deadletter"
	"weir/pipelines/codec"
	"weir/streams"
)

// runAggregating runs an aggregating stream's test: the topology the
// runner builds for it (statefulStream.topology: decoding, steps,
// group_by, window, count or aggregate, results in the to topic's
// format) on a streams.TestDriver, Kafka's TopologyTestDriver: one
// partition per topic, in-memory stores, a commit after every input (so
// emit = "updates" writes every update, and "final" a window's result
// once a later input moves stream time past its end plus grace). The
// results come out in order, then the dead letters.
func (h *testHarness) runAggregating(ctx context.Context, t *Test) ([]TestRecord, hcl.Diagnostics) {
	s := t.stream
	var diags hcl.Diagnostics
	type piped struct {
		topic      string
		key, value []byte
		in         *TestInput
	}
	var ins []piped
	for _, in := range t.Inputs {
		topic := in.Topic
		if topic == "" {
			topic = s.From[0]
		}
		v, d := h.encodeInput(in, topic)
		diags = append(diags, d...)
		ins = append(ins, piped{topic: topic, key: in.Key, value: v, in: in})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	failed := func(err error) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Test failed to run", Detail: err.Error(), Subject: t.Range.Ptr()}}
	}
	enc := h.encs[s.To]
	if enc == nil {
		enc = codec.JSON
	}
	ss := &statefulStream{s: s, ag: s.agg, tr: h.transformer(s.Steps, s.To), ctx: ctx, enc: enc}
	tp, err := ss.topology()
	if err != nil {
		return nil, failed(fmt.Errorf("stream %q: %w", s.Name, err))
	}
	d, err := streams.NewTestDriver(tp, streams.DriverConfig{AppID: s.Group})
	if err != nil {
		return nil, failed(fmt.Errorf("stream %q: %w", s.Name, err))
	}
	for _, p := range ins {
		if err := d.Pipe(p.topic, p.key, p.value, p.in.Timestamp, p.in.Headers...); err != nil {
			_ = d.Close()
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Test failed to run", Detail: err.Error(), Subject: p.in.Range.Ptr()}}
		}
	}
	if err := d.Close(); err != nil {
		return nil, failed(err)
	}
	var out []TestRecord
	for _, r := range d.Output(s.To) {
		out = append(out, TestRecord{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
	}
	for _, r := range d.Output(s.Group + "-dlq") {
		tr := TestRecord{Topic: deadletter.Topic(s.Name), Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, DeadLetter: true}
		for _, hd := range r.Headers {
			switch hd.Key {
			case deadletter.HeaderMessage:
				tr.Error = string(hd.Value)
			case deadletter.HeaderConnector, deadletter.HeaderClass, deadletter.HeaderTopic, deadletter.HeaderPartition, deadletter.HeaderOffset:
			default:
				tr.Headers = append(tr.Headers, hd)
			}
		}
		out = append(out, tr)
	}
	return out, nil
}
