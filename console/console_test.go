package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/admin"
	"weir/broker/brokertest/testbroker"
	"weir/broker/httpsec"
	"weir/internal/browsertest"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

func TestMain(m *testing.M) { browsertest.Main(m, weirbin.Cleanup) }

// env is a broker with a registry and a console on an admin listener.
type env struct {
	b    *testbroker.Broker
	reg  string // registry URL
	c    *Console
	base string // http://admin/console/
}

type envOptions struct {
	readOnly bool
	interval time.Duration // of the sampler; 0: 200 ms
	security *httpsec.Security
}

func startEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	b := testbroker.Start(t)
	e := &env{b: b, reg: b.Registry(t)}
	if o.interval == 0 {
		o.interval = 200 * time.Millisecond
	}
	c, err := New(Config{Kafka: kafkaclient.Options{Brokers: []string{b.Addr}}, Registry: srclient.Options{URLs: e.reg},
		ReadOnly: o.readOnly, Name: "test", SampleInterval: o.interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e.c = c
	s, err := admin.New(admin.Config{Addr: "127.0.0.1:0", Security: o.security})
	if err != nil {
		t.Fatal(err)
	}
	c.Mount(s)
	s.Start()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	e.base = "http://" + s.Addr() + "/console/"
	return e
}

// produce writes n records with values made by val to topic.
func (e *env) produce(t *testing.T, topic string, n int, key func(int) string, val func(int) []byte) {
	t.Helper()
	cl := e.b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key(i)), Value: val(i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consumeAndCommit polls cl (a group member) until it has read n records,
// then commits what it read.
func consumeAndCommit(ctx context.Context, t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, sb.String()
}

// checkPage loads url in tab, checks the status, the accessibility and
// (for a 390 px tab) the overflow, saves a screenshot and returns the
// text of main.
func checkPage(t *testing.T, tab *browsertest.Tab, name, url string, wantStatus int) string {
	t.Helper()
	if st := tab.Go(url); st != wantStatus {
		t.Fatalf("%s: status %d, want %d", url, st, wantStatus)
	}
	tab.CheckA11y(name)
	tab.CheckNoHorizontalOverflow(name)
	tab.Screenshot(name)
	return tab.Text("main")
}

// TestClusterAndTopicsPages: the cluster page shows the broker, the
// controller and the partitions with leader and ISR; the topics page
// lists a topic with its records; the topic page its partitions'
// offsets, its configs and, once sampled, its throughput; all pass the
// accessibility check at 1280 and 390 px wide.
func TestClusterAndTopicsPages(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	e := startEnv(t, envOptions{})
	e.b.CreateTopic("orders", 3, map[string]*string{"retention.ms": new("3600000")})
	e.produce(t, "orders", 30, func(i int) string { return fmt.Sprint("k", i) }, func(i int) []byte { return fmt.Appendf(nil, `{"n":%d}`, i) })
	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900})
		text := checkPage(t, tab, "cluster", e.base, 200)
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#brokers tbody tr").length`); n != 1 {
			t.Errorf("cluster page at %d px: %d brokers, want 1", w, n)
		}
		for _, want := range []string{"controller: broker 0", "orders", "under-replicated"} {
			if !strings.Contains(text, want) {
				t.Errorf("cluster page at %d px lacks %q:\n%s", w, want, text)
			}
		}
		if got := tab.Text("#under-replicated"); got != "0" {
			t.Errorf("under-replicated = %q, want 0", got)
		}
		text = checkPage(t, tab, "topics", e.base+"topics", 200)
		if !strings.Contains(text, "orders") || strings.Contains(text, "__consumer_offsets") {
			t.Errorf("topics page: want orders and no internal topics:\n%s", text)
		}
		if size := browsertest.Eval[string](tab, `[...document.querySelectorAll("#topics tbody tr")].find(tr => tr.cells[0].textContent === "orders").cells[4].textContent`); size == "0 B" {
			t.Errorf("topics page: orders has size %q", size)
		}
		// Produce more so that the throughput chart has a rate.
		e.produce(t, "orders", 10, func(i int) string { return "x" }, func(i int) []byte { return []byte("{}") })
		testkit.CheckFor(t, 20*time.Second, func() error {
			if len(e.c.hist.throughput("orders").Points) < 1 {
				return fmt.Errorf("no throughput sample yet")
			}
			return nil
		})
		text = checkPage(t, tab, "topic", e.base+"topics/orders", 200)
		for _, want := range []string{"retention.ms", "3600000", "Throughput of orders"} {
			if !strings.Contains(text, want) {
				t.Errorf("topic page lacks %q:\n%s", want, text)
			}
		}
		if got := tab.Text("#records"); got != "40" && w == 1280 || w == 390 && got != "50" {
			t.Errorf("records = %q at %d px", got, w)
		}
		// Sizes: the partitions' bytes on the leader's disk, not 0 B.
		sizes := browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#partitions tbody tr td:nth-child(7)")].map(td => td.textContent)`)
		if len(sizes) != 3 || slices.Contains(sizes, "0 B") {
			t.Errorf("partition sizes %q: want 3, none 0 B", sizes)
		}
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("svg.chart polyline, svg.chart circle").length`); n == 0 {
			t.Errorf("topic page: no throughput line drawn")
		}
	}
}

// TestAuthAndReadOnly: behind the admin listener's basic auth the
// console refuses a request without credentials (401) and serves one
// with them; in read-only mode the create-topic form is hidden and its
// POST refused (403), and the topic is not created.
func TestAuthAndReadOnly(t *testing.T) {
	t.Parallel()
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("ann: secret-pw,admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := httpsec.ParseAdmin("127.0.0.1:0", map[string]string{
		httpsec.AdminPrefix + httpsec.AuthenticationMethod:    "BASIC",
		httpsec.AdminPrefix + httpsec.AuthenticationUsersFile: users,
	})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := httpsec.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sec.Close)
	e := startEnv(t, envOptions{readOnly: true, security: sec})
	for _, p := range []string{"", "topics", "static/console.css"} {
		if code, _ := get(t, e.base+p); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", e.base+p, code)
		}
	}
	req, _ := http.NewRequest("GET", e.base+"topics", nil)
	req.SetBasicAuth("ann", "secret-pw")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET topics with credentials: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", e.base+"topics", strings.NewReader("name=nope&partitions=1&replication=1"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("ann", "secret-pw")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST topics in read-only mode: %d, want 403", resp.StatusCode)
	}
	if recs := e.b.ReadAll("nope"); recs != nil {
		t.Fatal("unexpected records")
	}

	if testing.Short() {
		return
	}
	br := browsertest.Shared(t)
	tab := br.Tab(t, browsertest.TabOptions{User: "ann", Password: "secret-pw"})
	text := checkPage(t, tab, "topics-read-only", e.base+"topics", 200)
	if strings.Contains(text, "Create a topic") || !strings.Contains(tab.Text("header"), "read-only") {
		t.Errorf("read-only topics page shows the create form or no read-only badge:\n%s", text)
	}
}

// TestCreateTopicFromBrowser: outside read-only mode the topics page's
// form creates a topic and lands on its page.
func TestCreateTopicFromBrowser(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	e := startEnv(t, envOptions{})
	tab := br.Tab(t, browsertest.TabOptions{Width: 390, Height: 844})
	checkPage(t, tab, "topics-create", e.base+"topics", 200)
	tab.Do(chromedp.SetValue(chromedp.CSS(`input[name=name]`), "made-here"),
		chromedp.SetValue(chromedp.CSS(`input[name=partitions]`), "2"))
	if st := tab.SubmitAndWait(chromedp.Click(chromedp.CSS(`form button[type=submit]`))); st != 200 {
		t.Fatalf("after creating: status %d", st)
	}
	if h := tab.Text("h1"); h != "Topic made-here" {
		t.Fatalf("after creating: page %q", h)
	}
	if n := browsertest.Eval[int](tab, `document.querySelectorAll("#partitions tbody tr").length`); n != 2 {
		t.Fatalf("made-here has %d partitions on its page, want 2", n)
	}
}
