package http

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/internal/gate"
	"weir/connectors/internal/pushtest"
	"weir/internal/kafkaclient"
)

type env struct {
	t    *testing.T
	b    *testbroker.Broker
	m    *connectors.Metrics
	gate *gate.Gate
	srv  *Server
	url  string
}

func newEnv(t *testing.T, topic string, partitions int32, o Options) *env {
	b := testbroker.Start(t)
	b.CreateTopic(topic, partitions, nil)
	e := &env{t: t, b: b, gate: gate.New()}
	o.Addr, o.Topic = "127.0.0.1:0", topic
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}, Extra: e.gate.Opts()},
		Metrics: connectors.NewMetricSet(nil)}
	e.m = rt.Metrics.For("http-test")
	e.srv = srv
	e.url = "http://" + run(t, rt, "http-test", srv.Source(), topic).String()
	t.Cleanup(e.gate.Resume) // before the stop, so a failed test does not leave the producer held
	return e
}

// run runs src through rt until the test ends and returns the address
// its server listens on once open.
func run(t *testing.T, rt *connectors.Runtime, name string, src *Source, topic string) net.Addr {
	t.Helper()
	pushtest.Run(t, rt, name, src, topic, func() bool { return src.Server().Addr() != nil })
	return src.Server().Addr()
}

type result struct {
	code       int
	body       response
	retryAfter string
}

var httpClient = &nethttp.Client{Transport: &nethttp.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}

func (e *env) post(path, ctype string, body []byte, hdr ...string) result {
	e.t.Helper()
	req, err := nethttp.NewRequest("POST", e.url+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		e.t.Errorf("POST %s: %v", path, err)
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Errorf("POST %s: answer %q is not JSON: %v", path, b, err)
	}
	return result{resp.StatusCode, r, resp.Header.Get("Retry-After")}
}

func ev(sender, n int) string {
	return fmt.Sprintf(`{"id":"s%d-%d","sender":%d,"n":%d,"level":"info","msg":"user logged in from 10.1.2.3","pad":"%s"}`,
		sender, n, sender, n, strings.Repeat("x", 80))
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// body encodes events [from, to) of sender as NDJSON, a JSON array or a
// gzipped NDJSON body, by request number.
func body(sender, from, to, req int) (ctype string, b []byte, hdr []string) {
	var buf bytes.Buffer
	switch req % 3 {
	case 1:
		buf.WriteString("[")
		for n := from; n < to; n++ {
			if n > from {
				buf.WriteString(",\n")
			}
			buf.WriteString(ev(sender, n))
		}
		buf.WriteString("]")
		return "application/json", buf.Bytes(), nil
	default:
		for n := from; n < to; n++ {
			buf.WriteString(ev(sender, n) + "\n")
		}
		if req%3 == 2 {
			return "application/x-ndjson", gz(buf.Bytes()), []string{"Content-Encoding", "gzip"}
		}
		return "application/x-ndjson; charset=utf-8", buf.Bytes(), nil
	}
}

// topicEvents reads topic and maps each event id to its value and key.
func (e *env) topicEvents(topic string, want int) map[string]*kgo.Record {
	e.t.Helper()
	var rs []*kgo.Record
	testbroker.CheckFor(e.t, 60*time.Second, func() error {
		rs = e.b.ReadAll(topic)
		if len(rs) < want {
			return fmt.Errorf("%d of %d records", len(rs), want)
		}
		return nil
	})
	out := map[string]*kgo.Record{}
	for _, r := range rs {
		var v struct{ ID string }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			e.t.Fatalf("record %d/%d: %v", r.Partition, r.Offset, err)
		}
		if out[v.ID] != nil {
			e.t.Fatalf("event %s twice in %s", v.ID, topic)
		}
		out[v.ID] = r
	}
	return out
}

// TestHTTP100k: 16 concurrent senders POST 100,000 events in batches of
// 100 (NDJSON, JSON arrays, gzip; to /topics/{topic} and the default
// path); every 200 came after the broker had them, and the topic holds
// each event once, as sent, keyed by its id field.
//
// With -short, 750 events a sender (12,000): six requests each, every
// format on both paths, the same checks; the full run sends 100,000.
func TestHTTP100k(t *testing.T) {
	t.Parallel()
	const senders, batch = 16, 125
	per := 6250
	if testing.Short() {
		per = 750
	}
	e := newEnv(t, "http", 4, Options{KeyField: "id"})
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for req, from := 0, 0; from < per; req, from = req+1, from+batch {
				ctype, b, hdr := body(s, from, from+batch, req)
				path := "/topics/http"
				if req%2 == 1 {
					path = "/ingest"
				}
				r := e.post(path, ctype, b, hdr...)
				if r.code != 200 || r.body.Accepted != batch {
					t.Errorf("sender %d request %d: %d %+v", s, req, r.code, r.body)
					return
				}
				accepted.Add(int64(r.body.Accepted))
			}
		}(s)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if accepted.Load() != int64(senders*per) {
		t.Fatalf("%d accepted", accepted.Load())
	}
	// Every 200 was answered after the acks: the topic already holds all.
	got := e.topicEvents("http", 0)
	if len(got) != senders*per {
		t.Fatalf("%d events in the topic right after the last 200, want %d", len(got), senders*per)
	}
	for s := 0; s < senders; s++ {
		for n := 0; n < per; n++ {
			id := fmt.Sprintf("s%d-%d", s, n)
			r := got[id]
			if r == nil || string(r.Value) != ev(s, n) || string(r.Key) != id {
				t.Fatalf("event %s: %v", id, r)
			}
		}
	}
	if v := value(e.m.RecordsOut); v != float64(senders*per) {
		t.Fatalf("records_out %v", v)
	}
}

func TestHTTPRejections(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "rej", 1, Options{MaxBodyBytes: 4096, MaxEventBytes: 1024, BearerToken: "s3cret", Username: "u", Password: "p",
		AllowedTopics: []string{"other"}})
	auth := []string{"Authorization", "Bearer s3cret"}
	cases := []struct {
		name, path, ctype string
		body              []byte
		hdr               []string
		code              int
		errPart           string
		line              int
		offset            int64
	}{
		{"no auth", "/ingest", "application/json", []byte(`{}`), nil, 401, "credentials", 0, -1},
		{"wrong token", "/ingest", "application/json", []byte(`{}`), []string{"Authorization", "Bearer nope"}, 401, "credentials", 0, -1},
		{"ndjson line", "/ingest", "application/x-ndjson", []byte("{\"a\":1}\n{\"a\":1}\n{\"a\":tru}\n"), auth, 400,
			"line 3: malformed body: invalid character '}' in literal true (expecting 'e') (at byte 8 of the line)", 3, -1},
		{"json offset", "/topics/rej", "application/json", []byte(`[{"a":1}, {"a" 2}]`), auth, 400,
			"byte offset 15: malformed body: invalid character '2' after object key", 0, 15},
		{"not objects", "/ingest", "application/json", []byte(`[1,2]`), auth, 400, "element 0 is not a JSON object", 0, 1},
		{"bad gzip", "/ingest", "application/json", []byte(`{}`), append([]string{"Content-Encoding", "gzip"}, auth...), 400, "gzip", 0, -1},
		{"body too large", "/ingest", "application/x-ndjson", bytes.Repeat([]byte("{}\n"), 2000), auth, 413, "larger than the limit of 4096", 0, -1},
		{"gzip bomb", "/ingest", "application/x-ndjson", gz(bytes.Repeat([]byte("{}\n"), 100000)), append([]string{"Content-Encoding", "gzip"}, auth...), 413, "after decompression", 0, -1},
		{"event too large", "/ingest", "application/x-ndjson", []byte("{}\n{\"a\":\"" + strings.Repeat("x", 2000) + "\"}\n"), auth, 413, "line 2: event too large", 2, -1},
		{"media type", "/ingest", "text/plain", []byte(`{}`), auth, 415, "Content-Type", 0, -1},
		{"encoding", "/ingest", "application/json", []byte(`{}`), append([]string{"Content-Encoding", "br"}, auth...), 415, "Content-Encoding", 0, -1},
		{"topic refused", "/topics/secret", "application/json", []byte(`{}`), auth, 403, `topic "secret" is not open`, 0, -1},
		{"topic invalid", "/topics/a%20b", "application/json", []byte(`{}`), auth, 400, "not a valid topic name", 0, -1},
	}
	for _, c := range cases {
		r := e.post(c.path, c.ctype, c.body, c.hdr...)
		if r.code != c.code || !strings.Contains(r.body.Error, c.errPart) || r.body.Line != c.line {
			t.Errorf("%s: %d %+v, want %d with %q (line %d)", c.name, r.code, r.body, c.code, c.errPart, c.line)
		}
		if c.offset >= 0 && (r.body.Offset == nil || *r.body.Offset != c.offset) {
			t.Errorf("%s: offset %v, want %d", c.name, r.body.Offset, c.offset)
		}
	}
	// Nothing of a rejected request was produced: the topic is empty.
	if rs := e.b.ReadAll("rej"); len(rs) != 0 {
		t.Fatalf("rejected requests produced %d records", len(rs))
	}
	// Basic auth, another allowed topic, one object, an empty body.
	if r := e.post("/topics/other", "application/json", []byte(`{"id":"one"}`), "Authorization", "Basic dTpw"); r.code != 200 || r.body.Accepted != 1 {
		t.Fatalf("basic auth: %d %+v", r.code, r.body)
	}
	if r := e.post("/ingest", "application/x-ndjson", nil, auth...); r.code != 200 || r.body.Accepted != 0 {
		t.Fatalf("empty body: %d %+v", r.code, r.body)
	}
	if got := e.topicEvents("other", 1); got["one"] == nil {
		t.Fatalf("other: %v", got)
	}
	resp, err := httpClient.Get(e.url + HealthPath)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()
	if v := value(e.m.EventCounter(EventUnauthorized)); v != 2 {
		t.Errorf("unauthorized events %v", v)
	}
}

// flood sends requests of 1 to 3 events from 16 goroutines until stop
// is closed, and returns the events per answer code.
func (e *env) flood(stop chan struct{}, prefix string) map[int][]string {
	var mu sync.Mutex
	out := map[int][]string{}
	var wg sync.WaitGroup
	for s := 0; s < 16; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := 1 + n%3
				var b []byte
				var ids []string
				for i := 0; i < k; i++ {
					id := fmt.Sprintf("%s-%d-%d-%d", prefix, s, n, i)
					ids = append(ids, id)
					b = fmt.Appendf(b, "{\"id\":%q}\n", id)
				}
				r := e.post("/ingest", "application/x-ndjson", b)
				if (r.code == 429 || r.code == 503) && r.retryAfter == "" {
					e.t.Errorf("%d without Retry-After", r.code)
				}
				if r.code == 200 && r.body.Accepted != k {
					e.t.Errorf("200 accepted %d of %d", r.body.Accepted, k)
				}
				mu.Lock()
				out[r.code] = append(out[r.code], ids...)
				mu.Unlock()
				if r.code != 200 {
					time.Sleep(time.Millisecond) // a client honouring Retry-After would wait longer
				}
			}
		}(s)
	}
	<-stop
	wg.Wait()
	return out
}

// TestHTTPOverload: a producer buffer of 5 events and a broker that stops
// reading: a flood of requests gets 429 with Retry-After; after the
// broker resumes, the topic holds exactly the events answered 200 and
// none of the 429'd ones.
func TestHTTPOverload(t *testing.T) {
	e := newEnv(t, "ovl", 2, Options{MaxBufferedRecords: 5})
	if r := e.post("/ingest", "application/json", []byte(`{"id":"warm"}`)); r.code != 200 {
		t.Fatalf("warm-up: %d %+v", r.code, r.body)
	}
	e.gate.Pause()
	stop := make(chan struct{})
	var res map[int][]string
	done := make(chan struct{})
	go func() { res = e.flood(stop, "o"); close(done) }()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if v := value(e.m.EventCounter(EventOverload)); v < 200 {
			return fmt.Errorf("%v requests answered 429", v)
		}
		return nil
	})
	e.gate.Resume()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if v := value(e.m.RecordsOut); v < 50 {
			return fmt.Errorf("%v acked after resuming", v)
		}
		return nil
	})
	close(stop)
	<-done
	if len(res[429]) == 0 || len(res[200]) == 0 {
		t.Fatalf("answers: %d events 200, %d events 429", len(res[200]), len(res[429]))
	}
	for code := range res {
		if code != 200 && code != 429 {
			t.Fatalf("%d events answered %d", len(res[code]), code)
		}
	}
	got := e.topicEvents("ovl", len(res[200])+1)
	for _, id := range res[200] {
		if got[id] == nil {
			t.Fatalf("event %s answered 200 is not in the topic", id)
		}
	}
	for _, id := range res[429] {
		if got[id] != nil {
			t.Fatalf("event %s answered 429 is in the topic", id)
		}
	}
	if len(got) != len(res[200])+1 {
		t.Fatalf("%d events in the topic, %d answered 200 (+1 warm-up)", len(got), len(res[200]))
	}
	t.Logf("%d events 200, %d events 429", len(res[200]), len(res[429]))
}

// TestHTTPUnavailable: with the broker gone, requests get 503 with
// Retry-After (their events are not acknowledged in time, or the buffer
// is full and connecting fails); health says 503; after the broker is
// back, requests get 200 again and every event answered 200 is in the
// topic.
func TestHTTPUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "una", 1, Options{MaxBufferedRecords: 20, AckTimeout: 2 * time.Second})
	if r := e.post("/ingest", "application/json", []byte(`{"id":"warm"}`)); r.code != 200 {
		t.Fatalf("warm-up: %d %+v", r.code, r.body)
	}
	e.gate.Cut()
	stop := make(chan struct{})
	var res map[int][]string
	done := make(chan struct{})
	go func() { res = e.flood(stop, "u"); close(done) }()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if v := value(e.m.EventCounter(EventUnavailable)); v < 20 {
			return fmt.Errorf("%v requests answered 503", v)
		}
		return nil
	})
	resp, err := httpClient.Get(e.url + HealthPath)
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("health with the broker gone: %v %v", resp, err)
	}
	resp.Body.Close()
	e.gate.Resume()
	before := value(e.m.RecordsOut)
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if v := value(e.m.RecordsOut); v < before+50 {
			return fmt.Errorf("%v acked after the broker came back", v-before)
		}
		return nil
	})
	close(stop)
	<-done
	if len(res[503]) == 0 || len(res[200]) == 0 {
		t.Fatalf("answers: %d events 200, %d events 503", len(res[200]), len(res[503]))
	}
	got := e.topicEvents("una", len(res[200])+1)
	for _, id := range res[200] {
		if got[id] == nil {
			t.Fatalf("event %s answered 200 is not in the topic", id)
		}
	}
	t.Logf("%d events 200, %d events 503, %d events 429", len(res[200]), len(res[503]), len(res[429]))
}

// TestKind: the "http" kind is registered with its spec and runs through
// the connector runtime.
func TestKind(t *testing.T) {
	t.Parallel()
	k, err := connectors.Default.Lookup("http")
	if err != nil || !k.IsSource() {
		t.Fatal(err)
	}
	if _, err := k.Spec.Decode(map[string]any{"topic": "bad topic"}); err == nil {
		t.Fatal("invalid topic accepted")
	}
	if _, err := k.Spec.Decode(map[string]any{"topic": "t", "username": "u"}); err == nil {
		t.Fatal("username without password accepted")
	}
	b := testbroker.Start(t)
	cfg, err := k.Spec.Decode(map[string]any{"topic": "kind", "address": "127.0.0.1:0", "brokers": []any{b.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := k.NewSource("web", cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + run(t, &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}}, "web", src.(*Source), "kind").String()
	resp, err := httpClient.Post(url+"/ingest", "application/x-ndjson", strings.NewReader("{\"via\":\"runtime\"}\n"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	if rs := b.ReadAll("kind"); len(rs) != 1 || string(rs[0].Value) != `{"via":"runtime"}` {
		t.Fatalf("%v", rs)
	}
}

func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
