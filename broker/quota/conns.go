package quota

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
)

// ConnConfig is Kafka's connection limits.
type ConnConfig struct {
	// MaxPerIP is max.connections.per.ip (Kafka's default: 2147483647).
	MaxPerIP int
	// Overrides is max.connections.per.ip.overrides, resolved: the limit
	// of each IP address (net.IP.String form).
	Overrides map[string]int
	// Max is max.connections, broker-wide (default 2147483647).
	Max int
}

// Unlimited is Kafka's default of the connection limits.
const Unlimited = math.MaxInt32

// ParseOverrides parses max.connections.per.ip.overrides: a comma
// separated list of host:count or ip:count (an IPv6 address may be in
// brackets). Hosts are returned as written; see ResolveOverrides.
func ParseOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndexByte(item, ':')
		if i <= 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not host:count", item)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(item[:i], "["), "]")
		n, err := strconv.Atoi(strings.TrimSpace(item[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: count must be a number >= 0", item)
		}
		out[host] = n
	}
	return out, nil
}

// ResolveOverrides turns the hosts of parsed overrides into IP addresses
// (Kafka resolves them once, at startup); lookup is net.LookupIP when nil.
func ResolveOverrides(hosts map[string]int, lookup func(string) ([]net.IP, error)) (map[string]int, error) {
	if lookup == nil {
		lookup = net.LookupIP
	}
	out := map[string]int{}
	for h, n := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			out[ip.String()] = n
			continue
		}
		ips, err := lookup(h)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: cannot resolve host %q: %v", h, err)
		}
		for _, ip := range ips {
			out[ip.String()] = n
		}
	}
	return out, nil
}

// TooManyError is a connection refused because its IP address has its
// maximum of connections (Kafka's TooManyConnectionsException).
type TooManyError struct {
	IP  string
	Max int
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("rejected connection from %s, address already has the configured maximum of %d connections", e.IP, e.Max)
}

// ConnLimiter counts open connections per IP address and in all, as
// Kafka's ConnectionQuotas: a connection over its address's limit is
// refused (closed at once); at the broker-wide limit new connections wait
// for one to close (Kafka's acceptor blocks), except on an exempt
// listener (the inter-broker one). Safe for concurrent use.
type ConnLimiter struct {
	cfg   ConnConfig
	mu    sync.Mutex
	perIP map[string]int
	total int
	freed chan struct{} // closed and replaced when a connection closes
}

// NewConnLimiter returns a limiter; zero limits in cfg mean unlimited.
func NewConnLimiter(cfg ConnConfig) *ConnLimiter {
	return &ConnLimiter{cfg: normalize(cfg), perIP: map[string]int{}, freed: make(chan struct{})}
}

func normalize(cfg ConnConfig) ConnConfig {
	if cfg.MaxPerIP <= 0 && len(cfg.Overrides) == 0 {
		cfg.MaxPerIP = Unlimited
	}
	if cfg.Max <= 0 {
		cfg.Max = Unlimited
	}
	return cfg
}

// SetConfig changes the limits (dynamic broker configs). Connections
// already open stay open; new ones are admitted under the new limits.
func (l *ConnLimiter) SetConfig(cfg ConnConfig) {
	l.mu.Lock()
	l.cfg = normalize(cfg)
	close(l.freed) // waiters re-check against the new total limit
	l.freed = make(chan struct{})
	l.mu.Unlock()
}

// Limited reports whether any limit is set.
func (l *ConnLimiter) Limited() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg.MaxPerIP < Unlimited || len(l.cfg.Overrides) > 0 || l.cfg.Max < Unlimited
}

// MaxFor returns the connection limit of ip.
func (l *ConnLimiter) MaxFor(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxFor(ip)
}

func (l *ConnLimiter) maxFor(ip string) int {
	if n, ok := l.cfg.Overrides[ip]; ok {
		return n
	}
	return l.cfg.MaxPerIP
}

// Admit counts a new connection from ip. It waits while the broker has
// max.connections open (unless exempt) and returns a *TooManyError when
// ip already has its maximum. On success the caller must call Release(ip)
// once the connection closes.
func (l *ConnLimiter) Admit(ctx context.Context, ip string, exempt bool) error {
	for {
		l.mu.Lock()
		if exempt || l.total < l.cfg.Max {
			break
		}
		ch := l.freed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer l.mu.Unlock()
	max := l.maxFor(ip)
	if l.perIP[ip] >= max {
		return &TooManyError{IP: ip, Max: max}
	}
	l.perIP[ip]++
	l.total++
	return nil
}

// Release uncounts a connection Admit let in.
func (l *ConnLimiter) Release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
	l.total--
	close(l.freed)
	l.freed = make(chan struct{})
}

// Open returns the connections counted from ip and in all.
func (l *ConnLimiter) Open(ip string) (fromIP, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.perIP[ip], l.total
}
