package quota

import (
	"context"
	"errors"
	"math"
	"net"
	"testing"
	"time"

	"weir/broker/metadata"
)

func TestRateMeasure(t *testing.T) {
	w := Window{Samples: 11, SizeMs: 1000}
	var r Rate
	// 1000 bytes at t=0: measured over the minimum of 10 full windows.
	r.Record(w, 1000, 0)
	if got := r.Measure(w, 0); got != 100 {
		t.Fatalf("rate after one record = %v, want 100 (1000 B over 10 s)", got)
	}
	// A steady 500 B/s for 30 s: the rate settles at 500.
	for ms := int64(1000); ms <= 30000; ms += 100 {
		r.Record(w, 50, ms)
	}
	if got := r.Measure(w, 30000); math.Abs(got-500) > 30 {
		t.Fatalf("steady rate = %v, want ~500", got)
	}
	// Quiet for longer than all windows: everything expired.
	if got := r.Measure(w, 30000+12000); got != 0 {
		t.Fatalf("rate after 12 s of silence = %v, want 0", got)
	}
}

func TestThrottleMs(t *testing.T) {
	w := Window{Samples: 11, SizeMs: 1000}
	var r Rate
	r.Record(w, 2000, 0) // 200 B/s over the 10 s minimum window
	for _, tc := range []struct {
		limit float64
		want  int64
	}{
		{limit: 1000, want: 0},
		{limit: 200, want: 0},
		{limit: 100, want: 10000}, // (200-100)/100 × 10 s
		{limit: 50, want: 30000},
	} {
		if got := r.ThrottleMs(w, tc.limit, 0); got != tc.want {
			t.Errorf("limit %v: throttle %d ms, want %d", tc.limit, got, tc.want)
		}
	}
}

func ptr(s string) *string { return &s }

// TestResolvePrecedence is Kafka's order of precedence (ClientQuotaManager
// doc, KIP-55): each row removes the most specific entity that matched in
// the row before.
func TestResolvePrecedence(t *testing.T) {
	u, c := named("alice"), named("app")
	d, none := defaultName, Name{}
	all := []struct {
		e   Entity
		key Key
	}{
		{Entity{u, c}, Key{"alice", "app"}},
		{Entity{u, d}, Key{"alice", "app"}},
		{Entity{u, none}, Key{"alice", ""}},
		{Entity{d, c}, Key{"alice", "app"}},
		{Entity{d, d}, Key{"alice", "app"}},
		{Entity{d, none}, Key{"alice", ""}},
		{Entity{none, c}, Key{"", "app"}},
		{Entity{none, d}, Key{"", "app"}},
	}
	limits := map[Entity]float64{}
	for i, a := range all {
		limits[a.e] = float64(i + 1)
	}
	// Entities of other users and clients never match.
	limits[Entity{named("bob"), none}] = 100
	limits[Entity{none, named("other")}] = 101
	limits[Entity{named("alice"), named("other")}] = 102
	for i, a := range all {
		limit, key, ok := Resolve(limits, "alice", "app")
		if !ok || limit != float64(i+1) || key != a.key {
			t.Fatalf("step %d (%s): got limit %v key %+v ok %v, want %v %+v", i+1, a.e, limit, key, ok, i+1, a.key)
		}
		delete(limits, a.e)
	}
	if l, _, ok := Resolve(limits, "alice", "app"); ok {
		t.Fatalf("nothing should apply, got %v", l)
	}
}

func TestResolveCases(t *testing.T) {
	u := func(n string) Name { return named(n) }
	d, none := defaultName, Name{}
	for _, tc := range []struct {
		name         string
		limits       map[Entity]float64
		user, client string
		want         float64
		key          Key
		ok           bool
	}{
		{name: "none", limits: nil, user: "a", client: "c"},
		{name: "client default gives each client its own rate", limits: map[Entity]float64{{none, d}: 5}, user: "a", client: "c", want: 5, key: Key{"", "c"}, ok: true},
		{name: "user beats client", limits: map[Entity]float64{{u("a"), none}: 1, {none, u("c")}: 2}, user: "a", client: "c", want: 1, key: Key{"a", ""}, ok: true},
		{name: "default user beats exact client", limits: map[Entity]float64{{d, none}: 1, {none, u("c")}: 2}, user: "a", client: "c", want: 1, key: Key{"a", ""}, ok: true},
		{name: "anonymous is a user", limits: map[Entity]float64{{u("ANONYMOUS"), none}: 7}, user: "ANONYMOUS", client: "", want: 7, key: Key{"ANONYMOUS", ""}, ok: true},
		{name: "empty client id matches no client entity", limits: map[Entity]float64{{none, d}: 1, {u("a"), d}: 2}, user: "a", client: ""},
		{name: "empty client id still matches its user", limits: map[Entity]float64{{u("a"), d}: 2, {u("a"), none}: 3}, user: "a", client: "", want: 3, key: Key{"a", ""}, ok: true},
	} {
		limit, key, ok := Resolve(tc.limits, tc.user, tc.client)
		if ok != tc.ok || limit != tc.want || key != tc.key {
			t.Errorf("%s: got %v %+v %v, want %v %+v %v", tc.name, limit, key, ok, tc.want, tc.key, tc.ok)
		}
	}
}

func TestEntityOfAndCheckValue(t *testing.T) {
	for _, tc := range []struct {
		parts []metadata.QuotaEntityPart
		want  Entity
		err   string
	}{
		{parts: []metadata.QuotaEntityPart{{Type: "client-id", Name: ptr("x")}}, want: Entity{ClientID: named("x")}},
		{parts: []metadata.QuotaEntityPart{{Type: "user", Name: nil}, {Type: "client-id", Name: ptr("x")}}, want: Entity{User: defaultName, ClientID: named("x")}},
		{parts: nil, err: "Invalid empty client quota entity"},
		{parts: []metadata.QuotaEntityPart{{Type: "user", Name: ptr("a")}, {Type: "user", Name: ptr("b")}}, err: "Invalid empty client quota entity, duplicate entity entry user"},
		{parts: []metadata.QuotaEntityPart{{Type: "group", Name: ptr("a")}}, err: "Unhandled client quota entity type: group"},
		{parts: []metadata.QuotaEntityPart{{Type: "user", Name: ptr("")}}, err: "Empty user not supported"},
	} {
		e, err := EntityOf(tc.parts)
		if tc.err != "" {
			if err == nil || err.Msg != tc.err || err.Code != "INVALID_REQUEST" {
				t.Errorf("%v: error %v, want %q", tc.parts, err, tc.err)
			}
			continue
		}
		if err != nil || e != tc.want {
			t.Errorf("%v: %v %v, want %v", tc.parts, e, err, tc.want)
		}
		back, _ := EntityOf(e.Parts())
		if back != e {
			t.Errorf("%v: Parts does not round-trip: %v", e, back)
		}
	}
	for _, tc := range []struct {
		key   string
		value float64
		err   string
	}{
		{key: ProducerByteRate, value: 1048576},
		{key: RequestPercentage, value: 12.5},
		{key: ProducerByteRate, value: 1.5, err: "Configuration producer_byte_rate must be a Long value"},
		{key: "producer_byte_rates", value: 1, err: "Invalid configuration key producer_byte_rates"},
		{key: ConsumerByteRate, value: 0, err: "Configuration consumer_byte_rate must be a positive number, got 0"},
	} {
		err := CheckValue(tc.key, tc.value)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s=%v: %v", tc.key, tc.value, err)
		case tc.err != "" && (err == nil || err.Msg != tc.err):
			t.Errorf("%s=%v: error %v, want %q", tc.key, tc.value, err, tc.err)
		}
	}
}

// TestManagerConverges: a client that sends as fast as it may and then
// honours each throttle gets the quota's rate.
func TestManagerConverges(t *testing.T) {
	m := NewManager(ProducerByteRate, DefaultWindow, 0)
	m.SetLimits(map[Entity]float64{{ClientID: named("p")}: 100_000})
	now := time.Unix(1000, 0)
	start := now
	var sent float64
	throttled := 0
	for now.Sub(start) < 60*time.Second {
		d := m.Record("ANONYMOUS", "p", 16384, now)
		sent += 16384
		if d > 0 {
			throttled++
			now = now.Add(d)
		}
		now = now.Add(time.Millisecond)
	}
	rate := sent / now.Sub(start).Seconds()
	if throttled == 0 || rate < 90_000 || rate > 125_000 {
		t.Fatalf("rate %.0f B/s with %d throttles, want ~100000", rate, throttled)
	}
	// Another client id has no quota.
	if d := m.Record("ANONYMOUS", "q", 1e9, now); d != 0 {
		t.Fatalf("unlimited client throttled %v", d)
	}
	if got := m.MaxValueInWindow("ANONYMOUS", "p"); got != 1_000_000 {
		t.Fatalf("max value in window %v, want 100000 × 10 s", got)
	}
	// Unrecord takes the bytes back.
	m2 := NewManager(ConsumerByteRate, DefaultWindow, 0)
	m2.SetLimits(map[Entity]float64{{ClientID: defaultName}: 1000})
	if d := m2.Record("u", "c", 50_000, now); d == 0 {
		t.Fatal("50 kB against 1 kB/s not throttled")
	}
	m2.Unrecord("u", "c", 50_000, now)
	if d := m2.Record("u", "c", 100, now); d != 0 {
		t.Fatalf("after unrecord still throttled %v", d)
	}
}

func TestRequestThrottleBounded(t *testing.T) {
	q := New(DefaultWindow)
	q.Request.SetLimits(map[Entity]float64{{User: defaultName}: 1})
	if d := q.Request.Record("u", "c", 1e6, time.Unix(0, 0)); d != time.Second {
		t.Fatalf("request throttle %v, want bounded to one window (1s)", d)
	}
}

func TestParseOverrides(t *testing.T) {
	got, err := ParseOverrides("127.0.0.1:2, [::1]:3 ,example.test:4")
	if err != nil || got["127.0.0.1"] != 2 || got["::1"] != 3 || got["example.test"] != 4 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"127.0.0.1", "h:x", "h:-1", ":3"} {
		if _, err := ParseOverrides(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	res, err := ResolveOverrides(got, func(h string) ([]net.IP, error) {
		if h == "example.test" {
			return []net.IP{net.ParseIP("10.0.0.7")}, nil
		}
		return nil, errors.New("no such host")
	})
	if err != nil || res["10.0.0.7"] != 4 || res["127.0.0.1"] != 2 || res["::1"] != 3 {
		t.Fatalf("%v %v", res, err)
	}
	if _, err := ResolveOverrides(map[string]int{"nowhere.test": 1}, func(string) ([]net.IP, error) { return nil, errors.New("nx") }); err == nil {
		t.Fatal("unresolvable host accepted")
	}
}

func TestConnLimiter(t *testing.T) {
	l := NewConnLimiter(ConnConfig{MaxPerIP: 2, Overrides: map[string]int{"10.0.0.1": 3}, Max: 4})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := l.Admit(ctx, "127.0.0.1", false); err != nil {
			t.Fatal(err)
		}
	}
	var tm *TooManyError
	if err := l.Admit(ctx, "127.0.0.1", false); !errors.As(err, &tm) || tm.Max != 2 {
		t.Fatalf("third connection: %v", err)
	}
	if err := l.Admit(ctx, "10.0.0.1", false); err != nil {
		t.Fatal(err)
	}
	if err := l.Admit(ctx, "10.0.0.1", false); err != nil {
		t.Fatal(err)
	}
	// Broker-wide limit (4) reached: the next waits until one closes.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := l.Admit(short, "10.0.0.1", false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("over max.connections: %v, want a wait", err)
	}
	// The exempt (inter-broker) listener is not held by it.
	if err := l.Admit(ctx, "10.0.0.2", true); err != nil {
		t.Fatal(err)
	}
	l.Release("10.0.0.2")
	done := make(chan error, 1)
	go func() { done <- l.Admit(ctx, "10.0.0.1", false) }()
	l.Release("127.0.0.1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ip, total := l.Open("10.0.0.1"); ip != 3 || total != 4 {
		t.Fatalf("open %d/%d, want 3/4", ip, total)
	}
}

func TestDescribeFilter(t *testing.T) {
	cx := []metadata.QuotaEntityPart{{Type: "client-id", Name: ptr("x")}}
	cd := []metadata.QuotaEntityPart{{Type: "client-id"}}
	ua := []metadata.QuotaEntityPart{{Type: "user", Name: ptr("a")}}
	uacx := []metadata.QuotaEntityPart{{Type: "client-id", Name: ptr("x")}, {Type: "user", Name: ptr("a")}}
	entries := []metadata.QuotaEntry{{Entity: cx}, {Entity: cd}, {Entity: ua}, {Entity: uacx}}
	names := func(es []metadata.QuotaEntry) (out []int) {
		for _, e := range es {
			for i, all := range entries {
				if len(all.Entity) == len(e.Entity) && &all.Entity[0] == &e.Entity[0] {
					out = append(out, i)
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		filter []Component
		strict bool
		want   []int
		err    string
	}{
		{name: "client x strict (kafka-configs --entity-name x)", filter: []Component{{EntityType: "client-id", Match: ptr("x")}}, strict: true, want: []int{0}},
		{name: "client x not strict", filter: []Component{{EntityType: "client-id", Match: ptr("x")}}, want: []int{0, 3}},
		{name: "client default", filter: []Component{{EntityType: "client-id", MatchType: MatchDefault}}, strict: true, want: []int{1}},
		{name: "any client", filter: []Component{{EntityType: "client-id", MatchType: MatchSpecified}}, strict: true, want: []int{0, 1}},
		{name: "user and client", filter: []Component{{EntityType: "user", Match: ptr("a")}, {EntityType: "client-id", MatchType: MatchSpecified}}, strict: true, want: []int{3}},
		{name: "everything", filter: nil, want: []int{0, 1, 2, 3}},
		{name: "duplicate", filter: []Component{{EntityType: "user", MatchType: MatchSpecified}, {EntityType: "user", Match: ptr("a")}}, err: "Entity type user cannot appear more than once in the filter."},
		{name: "exact without name", filter: []Component{{EntityType: "user"}}, err: "Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{name: "unknown type", filter: []Component{{EntityType: "group", MatchType: MatchSpecified}}, err: "Unsupported entity type group"},
		{name: "ip with user", filter: []Component{{EntityType: "ip", MatchType: MatchSpecified}, {EntityType: "user", MatchType: MatchSpecified}}, err: "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
	} {
		got, err := Describe(entries, tc.filter, tc.strict)
		if tc.err != "" {
			if err == nil || err.Msg != tc.err {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !equalInts(names(got), tc.want) {
			t.Errorf("%s: got %v %v, want %v", tc.name, names(got), err, tc.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Limits set later (dynamic max.connections.per.ip) apply to the
// connections already counted.
func TestConnLimiterSetConfig(t *testing.T) {
	l := NewConnLimiter(ConnConfig{})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := l.Admit(ctx, "10.0.0.1", false); err != nil {
			t.Fatal(err)
		}
	}
	if l.Limited() {
		t.Fatal("no limits, but Limited")
	}
	l.SetConfig(ConnConfig{MaxPerIP: 3})
	if !l.Limited() || l.MaxFor("10.0.0.1") != 3 {
		t.Fatalf("after SetConfig: limited %v max %d", l.Limited(), l.MaxFor("10.0.0.1"))
	}
	var tm *TooManyError
	if err := l.Admit(ctx, "10.0.0.1", false); !errors.As(err, &tm) || tm.Max != 3 {
		t.Fatalf("fourth connection: %v", err)
	}
	l.Release("10.0.0.1")
	if err := l.Admit(ctx, "10.0.0.1", false); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	l.SetConfig(ConnConfig{})
	if err := l.Admit(ctx, "10.0.0.1", false); err != nil {
		t.Fatalf("limits removed: %v", err)
	}
}
