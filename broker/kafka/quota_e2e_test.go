package kafka

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/quota"
	"weir/broker/tlsconf"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
)

// Quota tests measure over short windows (2 samples of 1 s: a client's
// burst before its first throttle is about one second of its quota), so
// that a few seconds of traffic show the rate a quota allows.
var quotaWindows = map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"}

// quotaEntity is an AlterClientQuotas entity: type, name pairs ("" name:
// the default).
func quotaEntity(kv ...string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i+1 < len(kv); i += 2 {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type = kv[i]
		if kv[i+1] != "" {
			n := kv[i+1]
			e.Name = &n
		}
		out = append(out, e)
	}
	return out
}

// setQuota sets (or with remove, removes) one quota and fails on an error.
func setQuota(t *testing.T, cl *kgo.Client, key string, value float64, remove bool, entity ...string) {
	t.Helper()
	resp := alterQuotas(t, cl, false, quotaEntry(key, value, remove, entity...))
	if e := resp.Entries[0]; e.ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas %v %s=%v: %v %v", entity, key, value, kerr.ErrorForCode(e.ErrorCode), deref(e.ErrorMessage))
	}
}

func quotaEntry(key string, value float64, remove bool, entity ...string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = quotaEntity(entity...)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value, op.Remove = key, value, remove
	e.Ops = append(e.Ops, op)
	return e
}

func alterQuotas(t *testing.T, cl *kgo.Client, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) *kmsg.AlterClientQuotasResponse {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// describeQuotas returns the quotas matching the filter as
// "type=name,...: key=value,..." lines (a nil name as <default>).
func describeQuotas(t *testing.T, cl *kgo.Client, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) ([]string, *kmsg.DescribeClientQuotasResponse) {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components, req.Strict = comps, strict
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.Entries {
		var ent, vals []string
		for _, p := range e.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			ent = append(ent, p.Type+"="+name)
		}
		for _, v := range e.Values {
			vals = append(vals, fmt.Sprintf("%s=%v", v.Key, v.Value))
		}
		out = append(out, strings.Join(ent, ",")+": "+strings.Join(vals, ","))
	}
	return out, resp
}

func component(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
	return c
}

// TestClientQuotasAdmin: AlterClientQuotas and DescribeClientQuotas as
// Kafka answers them (validation, defaults, removal, filters), the quotas
// kept across a restart, and a throttled Produce answered at once with
// throttle_time_ms while the connection is then not read for that long
// (KIP-219).
func TestClientQuotasAdmin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBrokerIn(t, dir, withBrokerConfig(t, quotaWindows))
	cl := b.client()
	setQuota(t, cl, quota.ProducerByteRate, 1048576, false, "client-id", "x")
	setQuota(t, cl, quota.ConsumerByteRate, 2048, false, "client-id", "")
	setQuota(t, cl, quota.RequestPercentage, 25.5, false, "user", "alice", "client-id", "x")
	setQuota(t, cl, quota.ProducerByteRate, 100, false, "user", "")

	// Per entry errors, Kafka's messages; the valid entry still applies.
	resp := alterQuotas(t, cl, false,
		quotaEntry("producer_byte_rate", 1.5, false, "client-id", "bad-long"),
		quotaEntry("no_such_quota", 1, false, "client-id", "y"),
		quotaEntry("producer_byte_rate", 1, false, "group", "g"),
		quotaEntry("producer_byte_rate", 1, false, "user", "a", "user", "b"),
		quotaEntry("consumer_byte_rate", 4096, false, "client-id", "ok"))
	wantErrs := []string{
		"Configuration producer_byte_rate must be a Long value",
		"Invalid configuration key no_such_quota",
		"Unhandled client quota entity type: group",
		"Invalid empty client quota entity, duplicate entity entry user",
		"",
	}
	for i, want := range wantErrs {
		e := resp.Entries[i]
		if want == "" {
			if e.ErrorCode != 0 {
				t.Errorf("entry %d: %v %s", i, kerr.ErrorForCode(e.ErrorCode), deref(e.ErrorMessage))
			}
			continue
		}
		if e.ErrorCode != kerr.InvalidRequest.Code || deref(e.ErrorMessage) != want {
			t.Errorf("entry %d: %v %q, want INVALID_REQUEST %q", i, kerr.ErrorForCode(e.ErrorCode), deref(e.ErrorMessage), want)
		}
	}
	// validate_only changes nothing.
	if r := alterQuotas(t, cl, true, quotaEntry("producer_byte_rate", 5, false, "client-id", "dry")); r.Entries[0].ErrorCode != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(r.Entries[0].ErrorCode))
	}

	x := "x"
	for _, tc := range []struct {
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []string
	}{
		{strict: true, comps: []kmsg.DescribeClientQuotasRequestComponent{component("client-id", 0, &x)}, want: []string{"client-id=x: producer_byte_rate=1.048576e+06"}},
		{strict: true, comps: []kmsg.DescribeClientQuotasRequestComponent{component("client-id", 1, nil)}, want: []string{"client-id=<default>: consumer_byte_rate=2048"}},
		{strict: false, comps: []kmsg.DescribeClientQuotasRequestComponent{component("client-id", 0, &x)}, want: []string{
			"client-id=x: producer_byte_rate=1.048576e+06", "client-id=x,user=alice: request_percentage=25.5"}},
		{strict: true, comps: []kmsg.DescribeClientQuotasRequestComponent{component("user", 2, nil)}, want: []string{"user=<default>: producer_byte_rate=100"}},
		{strict: false, comps: nil, want: []string{
			"client-id=<default>: consumer_byte_rate=2048", "client-id=ok: consumer_byte_rate=4096",
			"client-id=x: producer_byte_rate=1.048576e+06", "client-id=x,user=alice: request_percentage=25.5",
			"user=<default>: producer_byte_rate=100"}},
	} {
		got, _ := describeQuotas(t, cl, tc.strict, tc.comps...)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("describe %v strict=%v:\n%s\nwant\n%s", tc.comps, tc.strict, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	_, bad := describeQuotas(t, cl, false, component("client-id", 0, nil))
	if bad.ErrorCode != kerr.InvalidRequest.Code || deref(bad.ErrorMessage) != "Request specified MATCH_TYPE_EXACT, but set match string to null." {
		t.Errorf("bad filter: %v %q", kerr.ErrorForCode(bad.ErrorCode), deref(bad.ErrorMessage))
	}

	// Removing.
	setQuota(t, cl, quota.ProducerByteRate, 0, true, "user", "")
	if got, _ := describeQuotas(t, cl, true, component("user", 2, nil)); len(got) != 0 {
		t.Fatalf("after removal: %v", got)
	}

	// KIP-219 on a raw connection (client id "raw").
	setQuota(t, cl, quota.ProducerByteRate, 10000, false, "client-id", "raw")
	createTopic(t, b, "q", 1, nil)
	rc := dialRaw(t, b.addr)
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 9, 1, 5000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "q"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = testBatch(t, 25, 1000) // ~25 kB in a 1 s window against 10 kB/s: 1.5 s
	tp.Partitions = append(tp.Partitions, pp)
	produce.Topics = append(produce.Topics, tp)
	pr := rc.roundTrip(produce).(*kmsg.ProduceResponse)
	if pr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode))
	}
	throttle := time.Duration(pr.ThrottleMillis) * time.Millisecond
	if throttle < time.Second || throttle > 2*time.Second {
		t.Fatalf("throttle_time_ms %d, want 1.5 s ((25 kB/s - 10 kB/s) / 10 kB/s × 1 s)", pr.ThrottleMillis)
	}
	sent := time.Now()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	rc.write(rc.frame(av))
	if _, err := rc.readFrame(throttle + 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(sent); waited < throttle*9/10 {
		t.Fatalf("request after a %v throttle answered after %v: the connection was not muted", throttle, waited)
	}
	if n := counterValue(b.srv.metrics.throttled.WithLabelValues(quota.ProducerByteRate)); n < 1 {
		t.Fatalf("weir_kafka_throttled_responses_total{quota=producer_byte_rate} = %v", n)
	}

	// request_percentage: handler time over 0.001% of a thread is
	// throttled, bounded by one window (1 s), on any API with a
	// throttle_time_ms (here Metadata).
	setQuota(t, cl, quota.RequestPercentage, 0.001, false, "client-id", "busy")
	busy := b.client(kgo.ClientID("busy"))
	var mt int32
	for i := 0; i < 50 && mt == 0; i++ {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(context.Background(), busy)
		if err != nil {
			t.Fatal(err)
		}
		mt = resp.ThrottleMillis
	}
	if mt <= 0 || mt > 1000 {
		t.Fatalf("Metadata under request_percentage=0.001: throttle_time_ms %d, want in (0, 1000]", mt)
	}
	if n := counterValue(b.srv.metrics.throttled.WithLabelValues(quota.RequestPercentage)); n < 1 {
		t.Fatalf("weir_kafka_throttled_responses_total{quota=request_percentage} = %v", n)
	}

	// Restart: the quotas are in the metadata.
	b.stop()
	b2 := startBrokerIn(t, dir, withBrokerConfig(t, quotaWindows))
	got, _ := describeQuotas(t, b2.client(), true, component("client-id", 0, &x))
	if len(got) != 1 || got[0] != "client-id=x: producer_byte_rate=1.048576e+06" {
		t.Fatalf("after restart: %v", got)
	}
}

// testBatch is an uncompressed record batch of n records of size bytes.
func testBatch(t *testing.T, n, size int) []byte {
	t.Helper()
	values := make([][]byte, n)
	for i := range values {
		values[i] = bytes.Repeat([]byte{'v'}, size)
	}
	return buildBatch(values, 0, time.Now().UnixMilli())
}

// rateMeter counts bytes as a client sees them done (acknowledged or
// consumed) and the throttles it was told about.
type rateMeter struct {
	mu        sync.Mutex
	start     time.Time
	samples   []rateSample
	total     int64
	throttles atomic.Int64
}

type rateSample struct {
	at    time.Duration
	total int64
}

func newRateMeter() *rateMeter { return &rateMeter{start: time.Now()} }

func (m *rateMeter) add(n int) {
	m.mu.Lock()
	m.total += int64(n)
	m.samples = append(m.samples, rateSample{time.Since(m.start), m.total})
	m.mu.Unlock()
}

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (m *rateMeter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		m.throttles.Add(1)
	}
}

// rate is the bytes per second between from and to (since start).
func (m *rateMeter) rate(from, to time.Duration) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := func(d time.Duration) int64 {
		var v int64
		for _, s := range m.samples {
			if s.at > d {
				break
			}
			v = s.total
		}
		return v
	}
	return float64(at(to)-at(from)) / (to - from).Seconds()
}

// checkRate asserts a rate converged on a quota: throttles seen and the
// rate after the first burst at most 1.5× of it and at least 0.2×. The
// upper bound is the quota's check; the lower one only catches throttling
// gone wild (muting far longer than asked): a loaded machine alone took
// a consumer to 0.498× once, so it is not tighter.
func checkRate(t *testing.T, what string, m *rateMeter, limit float64, from, to time.Duration) {
	t.Helper()
	r := m.rate(from, to)
	t.Logf("%s: %.0f B/s against a quota of %.0f (%.2f×), %d throttled responses", what, r, limit, r/limit, m.throttles.Load())
	if m.throttles.Load() == 0 {
		t.Errorf("%s: the client saw no throttle_time_ms", what)
	}
	if r < 0.2*limit || r > 1.5*limit {
		t.Errorf("%s: %.0f B/s, want within 0.2-1.5× of the quota %.0f", what, r, limit)
	}
}

// The quotas count bytes on the wire: the clients in these tests send
// uncompressed batches, so that the value bytes they count are those.

// TestProducerByteRateFranz: franz-go producing as fast as it can over
// mutual TLS, as User:alice, converges on alice's producer_byte_rate;
// another certificate's user is not held back by it.
func TestProducerByteRateFranz(t *testing.T) {
	if testing.Short() {
		t.Skip("measures a byte rate over quota windows")
	}
	t.Parallel()
	s := newTLSSetup(t)
	cfg := s.settings(tlsconf.SSLClientAuth, "required", tlsconf.SSLPrincipalMappingRules, "RULE:^CN=(.*)$/$1/,DEFAULT")
	b := startBroker(t, withTLS(t, cfg, nil), withBrokerConfig(t, quotaWindows))
	createTopic(t, b, "pq", 1, nil)
	const limit = 512 << 10
	setQuota(t, b.client(), quota.ProducerByteRate, limit, false, "user", "alice")
	sslAddr := b.listenerAddr("SSL")
	producer := func(cn string, m *rateMeter) *kgo.Client {
		cert := s.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: cn}})
		cl, err := kgo.NewClient(kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(s.clientTLS(t, cert)), kgo.WithHooks(m),
			kgo.ClientID("producer-"+cn), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice, bob := newRateMeter(), newRateMeter()
	run := func(cl *kgo.Client, m *rateMeter, d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		val := bytes.Repeat([]byte{'a'}, 1024)
		for ctx.Err() == nil {
			cl.Produce(ctx, &kgo.Record{Topic: "pq", Value: val}, func(r *kgo.Record, err error) {
				if err == nil {
					m.add(len(r.Value))
				}
			})
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); run(producer("alice", alice), alice, 6*time.Second) }()
	run(producer("bob", bob), bob, 3*time.Second)
	wg.Wait()
	checkRate(t, "User:alice", alice, limit, 2*time.Second, 6*time.Second)
	if r := bob.rate(time.Second, 3*time.Second); r < 2*limit || bob.throttles.Load() > 0 {
		t.Errorf("User:bob (no quota) produced %.0f B/s with %d throttles: held back by alice's quota", r, bob.throttles.Load())
	}
}

// TestConsumerByteRateFranz: franz-go consuming a backlog with a client
// id under consumer_byte_rate converges on the quota.
func TestConsumerByteRateFranz(t *testing.T) {
	if testing.Short() {
		t.Skip("measures a byte rate over quota windows")
	}
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, quotaWindows))
	createTopic(t, b, "cq", 1, nil)
	// Batches of 64 KiB: a Fetch returns its first batch whole, and one
	// larger than the quota allows in a window would be throttled every
	// time (as in Kafka).
	fill := b.client(kgo.ClientID("filler"), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	val := bytes.Repeat([]byte{'c'}, 10<<10)
	var recs []*kgo.Record
	for range 1200 { // 12 MB
		recs = append(recs, &kgo.Record{Topic: "cq", Value: val})
	}
	if err := fill.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	setQuota(t, fill, quota.ConsumerByteRate, limit, false, "client-id", "slow-consumer")
	m := newRateMeter()
	cl := b.client(kgo.ClientID("slow-consumer"), kgo.WithHooks(m), kgo.ConsumeTopics("cq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	m.start = time.Now()
	end := m.start.Add(6 * time.Second)
	for time.Now().Before(end) {
		pctx, pcancel := context.WithDeadline(ctx, end)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { m.add(len(r.Value)) })
	}
	checkRate(t, "client-id slow-consumer", m, limit, 2*time.Second, 6*time.Second)
	if n := counterValue(b.srv.metrics.throttled.WithLabelValues(quota.ConsumerByteRate)); n < 1 {
		t.Errorf("weir_kafka_throttled_responses_total{quota=consumer_byte_rate} = %v", n)
	}
}

// TestQuotaKcat: kcat (librdkafka) producing 4 MiB under a 1 MiB/s
// producer_byte_rate on its client.id takes the time the quota gives
// (about a second of burst, then 1 MiB/s) and delivers everything.
func TestQuotaKcat(t *testing.T) {
	if testing.Short() {
		t.Skip("measures a byte rate over quota windows")
	}
	kcat := kcatPath(t)
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, quotaWindows))
	createTopic(t, b, "kq", 1, nil)
	const limit = 1 << 20
	setQuota(t, b.client(), quota.ProducerByteRate, limit, false, "client-id", "kcat-q")
	var in bytes.Buffer
	line := strings.Repeat("k", 1023) + "\n"
	const n = 4096
	for range n {
		in.WriteString(line)
	}
	start := time.Now()
	p := exec.Command(kcat, "-b", b.addr, "-P", "-t", "kq", "-X", "client.id=kcat-q", "-X", "linger.ms=5")
	p.Stdin = &in
	if out, err := p.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	took := time.Since(start)
	t.Logf("kcat produced %d KiB in %v under a %d KiB/s quota", n, took, limit>>10)
	if took < 1500*time.Millisecond {
		t.Errorf("4 MiB under 1 MiB/s took %v, want at least 1.5 s", took)
	}
	if thr := counterValue(b.srv.metrics.throttled.WithLabelValues(quota.ProducerByteRate)); thr < 1 {
		t.Errorf("no produce response throttled")
	}
	out, err := exec.Command(kcat, "-b", b.addr, "-C", "-t", "kq", "-o", "beginning", "-e", "-q", "-f", "%s\n").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "\n"); got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}
}

// dialFrom opens a connection to addr from the local address ip and
// checks it is served (ApiVersions answered).
func dialFrom(t *testing.T, ip, addr string) (*rawConn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	r := &rawConn{t: t, c: c}
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	r.write(r.frame(av))
	if _, err := r.readFrame(5 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

// TestMaxConnectionsPerIP: the connection over max.connections.per.ip
// from 127.0.0.1 is closed at once, 127.0.0.2 has its own limit from
// max.connections.per.ip.overrides, and a closed connection frees a slot.
// With max.connections the broker serves a new connection only once
// another closes.
func TestMaxConnectionsPerIP(t *testing.T) {
	t.Parallel()
	b := startBroker(t, withBrokerConfig(t, map[string]string{"max.connections.per.ip": "2", "max.connections.per.ip.overrides": "127.0.0.2:4"}), func(c *Config) { c.Addr = "127.0.0.1:0" })
	var first *rawConn
	for i := range 2 {
		r, err := dialFrom(t, "127.0.0.1", b.addr)
		if err != nil {
			t.Fatalf("connection %d from 127.0.0.1: %v", i+1, err)
		}
		first = r
	}
	if _, err := dialFrom(t, "127.0.0.1", b.addr); err == nil {
		t.Fatal("third connection from 127.0.0.1 served (max.connections.per.ip=2)")
	}
	for i := range 4 {
		if _, err := dialFrom(t, "127.0.0.2", b.addr); err != nil {
			t.Fatalf("connection %d from 127.0.0.2 (override 4): %v", i+1, err)
		}
	}
	if _, err := dialFrom(t, "127.0.0.2", b.addr); err == nil {
		t.Fatal("fifth connection from 127.0.0.2 served (override 4)")
	}
	// The broker counts a rejection after closing the socket the client
	// saw closed: polled.
	testkit.CheckFor(t, 10*time.Second, func() error {
		if n := counterValue(b.srv.metrics.connsRejected); n != 2 {
			return fmt.Errorf("weir_kafka_connections_rejected_total = %v, want 2", n)
		}
		return nil
	})
	first.c.Close()
	testkit.CheckFor(t, 10*time.Second, func() error {
		_, err := dialFrom(t, "127.0.0.1", b.addr)
		return err
	})

	// Broker-wide max.connections=2: the third waits for a slot.
	b2 := startBroker(t, withBrokerConfig(t, map[string]string{"max.connections": "2"}))
	a, err := dialFrom(t, "127.0.0.1", b2.addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialFrom(t, "127.0.0.1", b2.addr); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", b2.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waiting := &rawConn{t: t, c: c}
	av := kmsg.NewPtrApiVersionsRequest()
	waiting.write(waiting.frame(av))
	if _, err := waiting.readFrame(500 * time.Millisecond); err == nil {
		t.Fatal("third connection served at max.connections=2")
	}
	a.c.Close()
	if _, err := waiting.readFrame(10 * time.Second); err != nil {
		t.Fatalf("waiting connection not served after a slot freed: %v", err)
	}
}

// counterValue reads a counter.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
