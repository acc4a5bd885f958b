package elasticsearch

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/schemas"
	"weir/schemas/registry"
)

const eventSchema = `{"type":"record","name":"event","namespace":"weir.test","fields":[
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"host","type":["null","string"],"default":null},
	{"name":"code","type":"string"},
	{"name":"message","type":"string"}]}`

// startRegistry runs weir's schema registry on the broker's _schemas topic.
func startRegistry(t *testing.T, b *testbroker.Broker) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kl, err := registry.OpenKafka(ctx, registry.KafkaConfig{Client: kafkaclient.Options{Brokers: []string{b.Addr}}})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(ctx, registry.Config{Log: kl})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() { srv.Close(); reg.Close() })
	return srv.URL
}

// End to end: Avro records (and one JSON record) in a topic on a real weir
// broker, the connector runtime running the sink, a real Elasticsearch.
// A mapping conflict lands in the dead-letter topic with the server's
// error while the rest is indexed; a tombstone deletes; the group's
// offsets reach the partition ends; a restarted sink re-indexes nothing.
func TestEndToEndTopicToIndex(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	s.MustDo(t, "PUT", "/"+index, []byte(`{"mappings":{"properties":{"code":{"type":"long"}}}}`))

	b := testbroker.Start(t)
	regURL := startRegistry(t, b)
	topic := "app-logs"
	b.CreateTopic(topic, 3, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := src.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: eventSchema})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := schemas.Parse(eventSchema)
	if err != nil {
		t.Fatal(err)
	}
	serde := schemas.NewSerde(nil)
	serde.Add(int32(ss.ID), parsed)

	const n = 5000
	cl := b.Client(kgo.DefaultProduceTopic(topic))
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		code := fmt.Sprint(200 + i%300)
		if i == 1234 {
			code = "not-a-number" // mapping conflict: code is a long
		}
		v, err := serde.Encode(ctx, int32(ss.ID), map[string]any{
			"ts": time.UnixMilli(1700000000000 + int64(i)), "host": map[string]any{"string": "h1"},
			"code": code, "message": fmt.Sprintf("line %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint("k", i)), Value: v})
	}
	rs = append(rs,
		&kgo.Record{Key: []byte("json-1"), Value: []byte(`{"code":7,"message":"plain json"}`)},
		&kgo.Record{Key: []byte("k5")}) // tombstone: delete k5
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cfg := Defaults()
	cfg.URLs = []string{s.URL}
	cfg.Index = index
	cfg.SchemaRegistryURL = regURL
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))}
	run := func(sink *Sink) (stop func() error) {
		rctx, rcancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- rt.RunSink(rctx, "es-e2e", sink, connectors.SinkOptions{Topics: []string{topic}, FlushInterval: 300 * time.Millisecond})
		}()
		return func() error { rcancel(); return <-done }
	}
	start := time.Now()
	sink := NewSink(cfg)
	stop := run(sink)
	want := n - 1 - 1 + 1 // minus the conflict, minus the deleted k5, plus the JSON record
	testkit.CheckFor(t, time.Minute, func() error {
		if got := count(t, s, index); got != want {
			return fmt.Errorf("count %d, want %d", got, want)
		}
		if doc(t, s, index, "k5") != nil {
			return fmt.Errorf("k5 not deleted yet")
		}
		return nil
	})
	t.Logf("indexed %d documents %v after the sink started", want, time.Since(start).Round(time.Millisecond))
	got := doc(t, s, index, "k42")
	if got["message"] != "line 42" || got["host"] != "h1" || got["code"] != "242" || got["ts"] != "2023-11-14T22:13:20.042Z" {
		t.Fatalf("k42 = %v", got)
	}

	dlq := deadletter.Topic("es-e2e")
	var dead []*kgo.Record
	testkit.CheckFor(t, 30*time.Second, func() error {
		dead = b.ReadAll(dlq)
		if len(dead) != 1 {
			return fmt.Errorf("%d records in %s, want 1", len(dead), dlq)
		}
		return nil
	})
	headers := map[string]string{}
	for _, h := range dead[0].Headers {
		headers[h.Key] = string(h.Value)
	}
	if string(dead[0].Key) != "k1234" || !strings.Contains(headers[deadletter.HeaderMessage], "mapper_parsing_exception") ||
		headers[deadletter.HeaderTopic] != topic || headers[deadletter.HeaderConnector] != "es-e2e" {
		t.Fatalf("dead letter key %s headers %v", dead[0].Key, headers)
	}

	// Offsets are committed up to the partition ends.
	adm := kadm.NewClient(b.Client())
	testkit.CheckFor(t, 30*time.Second, func() error {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		lag, err := adm.Lag(ctx, "weir-connect-es-e2e")
		if err != nil {
			return err
		}
		var total int64
		for _, l := range lag.Sorted() {
			total += l.Lag.Total()
		}
		_ = ends
		if total != 0 {
			return fmt.Errorf("group lag %d", total)
		}
		return nil
	})
	if err := stop(); err != nil {
		t.Fatalf("RunSink: %v", err)
	}
	stored := sink.Indexer().Stats().Stored
	t.Logf("first run stopped %v after the start", time.Since(start).Round(time.Millisecond))

	// A restarted sink resumes at the committed offsets: nothing again.
	sink2 := NewSink(cfg)
	stop2 := run(sink2)
	cl.ProduceSync(ctx, &kgo.Record{Key: []byte("after-restart"), Value: []byte(`{"code":1}`)})
	testkit.CheckFor(t, 30*time.Second, func() error {
		if doc(t, s, index, "after-restart") == nil {
			return fmt.Errorf("new record not indexed after restart")
		}
		return nil
	})
	if err := stop2(); err != nil {
		t.Fatalf("RunSink after restart: %v", err)
	}
	if st := sink2.Indexer().Stats(); st.Stored != 1 {
		t.Fatalf("restarted sink stored %d documents, want 1 (first run stored %d)", st.Stored, stored)
	}
}
