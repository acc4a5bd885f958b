package pipelines

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"weir/pipelines/codec"
	"weir/pipelines/observe"
)

// BenchmarkTransformTaps measures BenchmarkTransform's json_event record
// (parse JSON → set → filter → encode) with the tap points of a running
// pipeline (observed.go): none (nil, as before taps existed), idle (the
// points exist, nobody taps: the atomic checks), and tapped (one
// subscriber on the second step's output at the default 10 samples/s:
// the per-record cost of the rate check, the rest skipped).
func BenchmarkTransformTaps(b *testing.B) {
	cfg, diags := LoadSources([]SourceFile{{Name: "b.hcl", Src: []byte(chainBench)}}, ".", Options{})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	chain := cfg.Streams[0].Steps
	event := []byte(`{"timestamp":1714557600000,"host":"vm","file":"/var/log/app.log","offset":1234,"message":"{\"time\":\"2024-05-01T10:00:00.123Z\",\"level\":\"info\",\"msg\":\"request served in 35ms\",\"user\":\"u12\",\"n\":42}"}`)
	newTr := func() *transformer {
		return &transformer{chain: chain, dec: &codec.Decoder{}, encs: map[string]*codec.Encoder{}, defTopic: "out", log: zap.NewNop()}
	}
	withTaps := func(hub *observe.Hub) *transformer {
		tr := newTr()
		r := &Runner{hub: hub}
		tr.steps = r.newStepTap("stream.s", chain)
		tr.in = hub.Point("stream.s", 0, observe.In)
		return tr
	}
	hub := observe.NewHub()
	tapped := withTaps(hub)
	sub, err := hub.Subscribe("stream.s", 2, observe.Out, observe.SubOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	go func() {
		for range sub.C {
		}
	}()
	for _, bc := range []struct {
		name string
		tr   *transformer
	}{{"none", newTr()}, {"idle", withTaps(observe.NewHub())}, {"tapped", tapped}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			sc := &scratch{}
			in := input{value: event}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				res := bc.tr.apply(ctx, &in, sc)
				if res.outcome != Keep || res.err != nil {
					b.Fatal(res.err)
				}
			}
		})
	}
}

// TestIdleTapsAllocateNothing: tap points nobody taps add no allocation
// to a record's transform (BenchmarkTransformTaps measures the time).
func TestIdleTapsAllocateNothing(t *testing.T) {
	cfg, diags := LoadSources([]SourceFile{{Name: "b.hcl", Src: []byte(chainBench)}}, ".", Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	chain := cfg.Streams[0].Steps
	hub := observe.NewHub()
	plain := &transformer{chain: chain, dec: &codec.Decoder{}, encs: map[string]*codec.Encoder{}, defTopic: "out", log: zap.NewNop()}
	idle := &transformer{chain: chain, dec: &codec.Decoder{}, encs: map[string]*codec.Encoder{}, defTopic: "out", log: zap.NewNop(),
		steps: (&Runner{hub: hub}).newStepTap("stream.s", chain), in: hub.Point("stream.s", 0, observe.In)}
	in := input{value: []byte(`{"message":"{\"level\":\"info\",\"n\":42}"}`)}
	allocs := func(tr *transformer) float64 {
		sc := &scratch{}
		return testing.AllocsPerRun(200, func() {
			if res := tr.apply(context.Background(), &in, sc); res.outcome != Keep {
				t.Fatal(res.err)
			}
		})
	}
	if a, b := allocs(plain), allocs(idle); a != b {
		t.Fatalf("%v allocations per record without taps, %v with idle taps", a, b)
	}
}
