package quota

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"weir/broker/metadata"
)

// sensorExpiry is how long an idle client's rate is kept (Kafka: an hour).
const sensorExpiry = time.Hour

// Manager measures one quota (producer_byte_rate, consumer_byte_rate or
// request_percentage) per client and says how long a client over it is
// throttled (Kafka's ClientQuotaManager). Safe for concurrent use.
type Manager struct {
	name          string
	window        Window
	maxThrottleMs int64 // 0: unbounded
	limits        atomic.Pointer[map[Entity]float64]

	mu        sync.Mutex
	sensors   map[Key]*sensor
	lastSweep int64
	// resolved caches Resolve by the request's user and client id (one
	// map lookup per request instead of up to eight); cleared when the
	// limits change or sensors expire.
	resolved map[Key]resolution
}

type resolution struct {
	limit float64
	s     *sensor // nil: no quota applies
}

type sensor struct {
	mu       sync.Mutex
	rate     Rate
	lastUsed int64 // ms
}

// NewManager returns a manager of quota name (one of the quota names)
// measured over w. maxThrottle bounds the throttle time (Kafka bounds
// request_percentage throttles by one window); 0 leaves it unbounded.
func NewManager(name string, w Window, maxThrottle time.Duration) *Manager {
	return &Manager{name: name, window: w, maxThrottleMs: maxThrottle.Milliseconds(), sensors: map[Key]*sensor{}}
}

// Name returns the quota's name.
func (m *Manager) Name() string { return m.name }

// SetLimits replaces the limits in force (this quota's entries of
// Limits). Rates measured so far are kept.
func (m *Manager) SetLimits(l map[Entity]float64) {
	m.mu.Lock()
	m.limits.Store(&l)
	clear(m.resolved)
	m.mu.Unlock()
}

// Enabled reports whether any entity has this quota: when not, nothing
// needs measuring.
func (m *Manager) Enabled() bool {
	l := m.limits.Load()
	return l != nil && len(*l) > 0
}

// Limit returns the quota that applies to user and clientID.
func (m *Manager) Limit(user, clientID string) (float64, bool) {
	l := m.limits.Load()
	if l == nil {
		return 0, false
	}
	limit, _, ok := Resolve(*l, user, clientID)
	return limit, ok
}

// lookup returns the quota and the sensor of a client (nil when no quota
// applies).
func (m *Manager) lookup(user, clientID string, nowMs int64) (float64, *sensor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if nowMs-m.lastSweep > time.Minute.Milliseconds() {
		m.lastSweep = nowMs
		for k, s := range m.sensors {
			if nowMs-atomic.LoadInt64(&s.lastUsed) > sensorExpiry.Milliseconds() {
				delete(m.sensors, k)
				clear(m.resolved)
			}
		}
	}
	req := Key{User: user, ClientID: clientID}
	if r, ok := m.resolved[req]; ok {
		return r.limit, r.s
	}
	var r resolution
	if l := m.limits.Load(); l != nil {
		if limit, key, ok := Resolve(*l, user, clientID); ok {
			r.limit = limit
			if r.s = m.sensors[key]; r.s == nil {
				r.s = &sensor{lastUsed: nowMs}
				m.sensors[key] = r.s
			}
		}
	}
	if m.resolved == nil || len(m.resolved) > 100_000 {
		m.resolved = map[Key]resolution{}
	}
	m.resolved[Key{User: strings.Clone(user), ClientID: strings.Clone(clientID)}] = r
	return r.limit, r.s
}

// Record counts v (bytes, or percent of a thread's time) for the client
// at now and returns how long it is to be throttled: 0 while its rate is
// within its quota, else the time for the rate to come back to the quota
// with nothing more recorded (Kafka's QuotaUtils.throttleTime, bounded
// for request_percentage).
func (m *Manager) Record(user, clientID string, v float64, now time.Time) time.Duration {
	ms := now.UnixMilli()
	limit, s := m.lookup(user, clientID, ms)
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	atomic.StoreInt64(&s.lastUsed, ms)
	s.rate.Record(m.window, v, ms)
	t := s.rate.ThrottleMs(m.window, limit, ms)
	if m.maxThrottleMs > 0 && t > m.maxThrottleMs {
		t = m.maxThrottleMs
	}
	return time.Duration(t) * time.Millisecond
}

// Unrecord takes back v recorded at now (a throttled Fetch is answered
// empty, so its bytes do not count; Kafka's unrecordQuotaSensor).
func (m *Manager) Unrecord(user, clientID string, v float64, now time.Time) {
	ms := now.UnixMilli()
	_, s := m.lookup(user, clientID, ms)
	if s == nil {
		return
	}
	s.mu.Lock()
	s.rate.Record(m.window, -v, ms)
	s.mu.Unlock()
}

// MaxValueInWindow is the most a client may take at once without being
// throttled for sure, limit × (samples-1) × window size (Kafka caps a
// Fetch's max bytes with it); +Inf when no quota applies.
func (m *Manager) MaxValueInWindow(user, clientID string) float64 {
	limit, ok := m.Limit(user, clientID)
	if !ok {
		return math.Inf(1)
	}
	return limit * float64(m.window.Samples-1) * float64(m.window.SizeMs) / 1000
}

// Quotas are the client quota managers of one broker.
type Quotas struct {
	Produce, Fetch, Request *Manager
}

// New returns the managers, measuring over w. Request throttles are
// bounded by one window, as Kafka's ClientRequestQuotaManager does.
func New(w Window) *Quotas {
	return &Quotas{
		Produce: NewManager(ProducerByteRate, w, 0),
		Fetch:   NewManager(ConsumerByteRate, w, 0),
		Request: NewManager(RequestPercentage, w, time.Duration(w.SizeMs)*time.Millisecond),
	}
}

// Update takes the limits of a metadata image.
func (q *Quotas) Update(im *metadata.Image) {
	l := LimitsOf(im)
	for _, m := range []*Manager{q.Produce, q.Fetch, q.Request} {
		m.SetLimits(l[m.name])
	}
}
