package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testkit"
)

func startNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return n
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSingleNodeServesAndRestarts: a node with every listener serves
// Kafka, /readyz, /metrics and the registry; after Shutdown a new node
// over the same directory keeps the cluster id and the records.
func TestSingleNodeServesAndRestarts(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, KafkaAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", RegistryAddr: "127.0.0.1:0"}
	n := startNode(t, cfg)
	if code, body := get(t, "http://"+n.AdminAddr()+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if code, body := get(t, "http://"+n.AdminAddr()+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d", code)
	}
	// The registry answers (503 while it reads _schemas, then 200).
	testkit.CheckFor(t, 30*time.Second, func() error {
		if code, body := get(t, n.RegistryURL()+"/subjects"); code != 200 {
			return fmt.Errorf("registry /subjects: %d %s", code, body)
		}
		return nil
	})
	id, admin := n.ClusterID(), n.AdminAddr()
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if _, err := http.Get("http://" + admin + "/readyz"); err == nil {
		t.Fatal("admin listener still serving after Shutdown")
	}

	n2 := startNode(t, cfg)
	if n2.ClusterID() != id {
		t.Fatalf("cluster id %s after restart, was %s", n2.ClusterID(), id)
	}
	cl2, err := kgo.NewClient(kgo.SeedBrokers(n2.KafkaAddr()), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	fs := cl2.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if rs := fs.Records(); len(rs) != 1 || string(rs[0].Value) != "kept" {
		t.Fatalf("after restart read %v", rs)
	}
}

// TestStartErrors: a bad broker config or a taken address fails Start
// with an error naming it, and leaves nothing bound.
func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(context.Background(), Config{DataDir: dir, KafkaAddr: "127.0.0.1:0", BrokerConfigs: map[string]string{"num.partitions": "zero"}})
	if err == nil || !strings.Contains(err.Error(), "num.partitions") {
		t.Fatalf("bad config: error %v, want one naming num.partitions", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, err = Start(context.Background(), Config{DataDir: dir, KafkaAddr: "127.0.0.1:0", AdminAddr: taken.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("taken admin address: error %v, want one naming %s", err, taken.Addr())
	}
	// A default registry address that is taken only disables the registry.
	n := startNode(t, Config{DataDir: dir, KafkaAddr: "127.0.0.1:0", RegistryAddr: taken.Addr().String(), RegistryAddrIsDefault: true})
	if n.RegistryURL() != "" {
		t.Fatalf("registry at %s on a taken default port", n.RegistryURL())
	}
	// The failed starts left the data directory usable (metadata closed).
	if n.ClusterID() == "" {
		t.Fatal("no cluster id")
	}
}
