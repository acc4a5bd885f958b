package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/browsertest"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// weirBroker is a `weir broker` process with its console.
type weirBroker struct {
	kafka, admin, registry string
}

// startWeirBroker runs `weir broker` with basic auth on its admin
// listener (user ann) and returns its addresses from its log.
func startWeirBroker(t *testing.T) weirBroker {
	t.Helper()
	bin := weirbin.Build(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("ann: ann-pw,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "broker.log")
	p, err := testkit.StartProc(bin, []string{"broker", "--data-dir", filepath.Join(dir, "data"),
		"--kafka-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--registry-addr", "127.0.0.1:0",
		"--config", "listener.name.admin.authentication.method=BASIC",
		"--config", "listener.name.admin.authentication.users.file=" + users,
		"--config", "group.initial.rebalance.delay.ms=0",
		"--log-format", "json"}, logPath, "web console")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.WaitReady(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	var b weirBroker
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Msg, Addr                            string
			KafkaAddr, AdminAddr, SchemaRegistry string `json:"-"`
		}
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &l) != nil || json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if l.Msg == "broker started" {
			b.kafka, _ = m["kafka_addr"].(string)
			b.registry, _ = m["schema_registry"].(string)
		}
		if l.Msg == "web console" {
			b.admin = l.Addr
		}
	}
	if b.kafka == "" || b.admin == "" || b.registry == "" {
		t.Fatalf("weir broker's log does not say its addresses: %+v (log %s)", b, logPath)
	}
	return b
}

// TestWeirBrokerConsole: `weir broker` serves the console on its admin
// listener behind its basic auth. Against the running process: a
// request without credentials is refused (401); with them, in a
// browser, every page loads and passes the accessibility and 390 px
// checks, showing the topic, the Avro records decoded through the
// broker's own registry, the consumer group with its lag, and the
// subject.
func TestWeirBrokerConsole(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	wb := startWeirBroker(t)
	base := "http://" + wb.admin + "/console/"
	if code, _ := get(t, base); code != http.StatusUnauthorized {
		t.Fatalf("GET %s without credentials: %d, want 401", base, code)
	}

	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{wb.kafka}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "page-views"); err != nil {
		t.Fatal(err)
	}
	enc := registerAvro(t, wb.registry, "page-views-value", pageViewSchema)
	var recs []*kgo.Record
	for i := 0; i < 24; i++ {
		recs = append(recs, &kgo.Record{Topic: "page-views", Key: fmt.Appendf(nil, "u%d", i%4),
			Value: enc(map[string]any{"user": fmt.Sprint("u", i%4), "path": fmt.Sprintf("/p/%d", i), "ms": int64(i)})})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A group that read and committed 24 records; 6 more arrive after.
	gcl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{wb.kafka}}, kgo.ConsumerGroup("reporting"),
		kgo.ConsumeTopics("page-views"), kgo.DisableAutoCommit(), kgo.ClientID("reporting-app"))
	if err != nil {
		t.Fatal(err)
	}
	defer gcl.Close()
	consumeAndCommit(ctx, t, gcl, 24)
	if err := cl.ProduceSync(ctx, recs[:6]...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900, User: "ann", Password: "ann-pw"})
		pages := []struct{ name, path, want string }{
			{"weir-cluster", "", "page-views"},
			{"weir-topics", "topics", "page-views"},
			{"weir-topic", "topics/page-views", "cleanup.policy"},
			{"weir-records", "topics/page-views/records?key=u3", `"path": "/p/23"`},
			{"weir-groups", "groups", "reporting"},
			{"weir-group", "groups/reporting", "reporting-app"},
			{"weir-schemas", "schemas", "page-views-value"},
			{"weir-subject", "schemas/page-views-value", `"name": "PageView"`},
		}
		for _, p := range pages {
			if text := checkPage(t, tab, p.name, base+p.path, 200); !strings.Contains(text, p.want) {
				t.Errorf("%s at %d px lacks %q:\n%s", p.name, w, p.want, text)
			}
		}
		testkit.CheckFor(t, 30*time.Second, func() error {
			tab.Go(base + "groups/reporting")
			if got := tab.Text("#total-lag"); got != "6" {
				return fmt.Errorf("lag of reporting %q, want 6", got)
			}
			return nil
		})
	}
}
