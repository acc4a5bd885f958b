package streams

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/srclient"
	"weir/schemas"
)

// TestAvroThroughRegistryAndDeadLetters runs an app against a real broker
// and registry: Avro in (decoded with the writer schema from the
// registry), Avro out (a second registered schema), and records that do
// not decode go to the dead-letter topic with the error while the stream
// keeps processing the records after them.
func TestAvroThroughRegistryAndDeadLetters(t *testing.T) {
	b := testbroker.Start(t)
	url := b.Registry(t)
	rc, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	inSchema := `{"type":"record","name":"Log","fields":[{"name":"service","type":"string"},{"name":"level","type":"string"},{"name":"ms","type":"long"}]}`
	outSchema := `{"type":"record","name":"Slow","fields":[{"name":"service","type":"string"},{"name":"seconds","type":"double"}]}`
	in, err := rc.CreateSchema(ctx, "logs-value", sr.Schema{Schema: inSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	out, err := rc.CreateSchema(ctx, "slow-value", sr.Schema{Schema: outSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	serde := schemas.NewSerde(srclient.Source(rc))
	b.CreateTopic("logs", 2, nil)
	b.CreateTopic("slow", 1, nil) // not auto-created: see TestCountExactAcrossKillAndScaleOut

	bld := NewBuilder()
	logs := From(bld, "logs", String(), Avro(serde, 0, nil))
	MapValues(logs.Filter(func(_ string, v any) bool { return v.(map[string]any)["ms"].(int64) >= 1000 }),
		func(_ string, v any) any {
			m := v.(map[string]any)
			return map[string]any{"service": m["service"], "seconds": float64(m["ms"].(int64)) / 1000}
		}).To("slow", String(), Avro(serde, int32(out.ID), nil))
	tp := mustBuild(t, bld)
	inst := startInstance(t, tp, []string{b.Addr}, "avro-app", nil)

	enc := func(svc string, ms int64) []byte {
		v, err := serde.Encode(ctx, int32(in.ID), map[string]any{"service": svc, "level": "info", "ms": ms})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	prod := b.Client()
	recs := []*kgo.Record{
		{Topic: "logs", Key: []byte("a"), Value: enc("api", 1500)},
		{Topic: "logs", Key: []byte("b"), Value: []byte("not avro at all")},
		{Topic: "logs", Key: []byte("a"), Value: enc("api", 20)},
		{Topic: "logs", Key: []byte("b"), Value: []byte{0, 0, 0, 0x7f, 0xff, 1}}, // unknown schema id
		{Topic: "logs", Key: []byte("b"), Value: enc("db", 3000)},
	}
	produceAll(t, prod, recs)
	var got []*kgo.Record
	testbroker.CheckFor(t, 30*time.Second, func() error {
		got = b.ReadAll("slow")
		if len(got) < 2 {
			return fmt.Errorf("slow has %d records", len(got))
		}
		return nil
	})
	seen := map[string]float64{}
	for _, r := range got {
		_, v, err := serde.Decode(ctx, r.Value)
		if err != nil {
			t.Fatal(err)
		}
		m := v.(map[string]any)
		seen[m["service"].(string)] = m["seconds"].(float64)
	}
	if len(got) != 2 || seen["api"] != 1.5 || seen["db"] != 3 {
		t.Fatalf("slow = %v", seen)
	}
	var dl []*kgo.Record
	testbroker.CheckFor(t, 30*time.Second, func() error {
		dl = b.ReadAll("avro-app-dlq")
		if len(dl) < 2 {
			return fmt.Errorf("dlq has %d records", len(dl))
		}
		return nil
	})
	for _, r := range dl {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[deadletter.HeaderTopic] != "logs" || !strings.Contains(h[deadletter.HeaderMessage], "decode failed") {
			t.Fatalf("dead letter %q headers %v", r.Value, h)
		}
	}
	inst.stop(t)
}
