package kafka

// Client quotas and connection limits (broker/quota does the accounting):
//
//   - producer_byte_rate: a Produce request's size is counted when it is
//     handled; request_percentage: the time its handler took (synchronous
//     handlers: a Fetch's long-poll wait is not handler time), as a
//     percentage of one thread; consumer_byte_rate: in the Fetch handler
//     (fetchQuota).
//   - A client over a quota gets its response at once with throttle_time_ms
//     set (the larger of the throttles), and the broker reads nothing more
//     from its connection for that long (KIP-219's channel muting), so a
//     client that ignores throttle_time_ms is held back too.
//   - Connections over max.connections.per.ip are closed at once (logged,
//     rate-limited); at max.connections the listener accepts no more until
//     one closes (the inter-broker listener excepted).

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/metadata"
	"weir/broker/quota"
)

// startQuotas builds the quota managers and connection limiter from the
// broker config and follows the client quotas of the metadata.
func (s *Server) startQuotas() error {
	bc := s.cfg.BrokerConfig
	s.quotas = quota.New(bc.QuotaWindow())
	lim, err := bc.ConnLimits()
	if err != nil {
		return err
	}
	s.connLimit = quota.NewConnLimiter(lim)
	// max.connections, max.connections.per.ip(.overrides) are dynamic.
	bc.OnChange(func(names []string) {
		for _, n := range names {
			if strings.HasPrefix(n, "max.connections") {
				if lim, err := bc.ConnLimits(); err == nil { // validated when set
					s.connLimit.SetConfig(lim)
				}
				return
			}
		}
	})
	s.meta.Watch(func(c metadata.Change) {
		if c.Record.Type == metadata.TypeClientQuota {
			s.quotas.Update(c.After)
		}
	})
	s.quotas.Update(s.meta.Image())
	return nil
}

// admit counts a new connection against the connection limits; false
// means it was refused and closed. The caller releases an admitted one
// (releaseConn) when it closes.
//
// Every connection is counted, limited or not, so limits set later
// (dynamic max.connections*) apply to the connections already open.
func (s *Server) admit(ctx context.Context, l *boundListener, nc net.Conn) (ip string, ok bool) {
	ip, _, _ = net.SplitHostPort(nc.RemoteAddr().String())
	if a := net.ParseIP(ip); a != nil {
		ip = a.String()
	}
	exempt := l.cfg.Name == s.cfg.InterBrokerListener && len(s.bound) > 1
	if err := s.connLimit.Admit(ctx, ip, exempt); err != nil {
		nc.Close()
		if ctx.Err() == nil {
			s.metrics.connsRejected.Inc()
			s.warn.Log("conn-limit:"+ip, "over", "connection refused: "+err.Error()+" (max.connections.per.ip)",
				zap.String("listener", l.cfg.Name), zap.String("remote", nc.RemoteAddr().String()))
		}
		return "", false
	}
	return ip, true
}

func (s *Server) releaseConn(ip string, admitted bool) {
	if admitted {
		s.connLimit.Release(ip)
	}
}

// quotaStart is when a request's handler began, for request_percentage
// (zero when no request quota is set).
func (s *Server) quotaStart() time.Time {
	if s.quotas.Request.Enabled() {
		return time.Now()
	}
	return time.Time{}
}

// throttle records r against the client's quotas after its handler ran,
// sets throttle_time_ms in resp (nil for acks=0) and mutes the connection
// for the throttle time.
func (c *conn) throttle(r *Request, resp kmsg.Response, began time.Time) {
	q := c.s.quotas
	d, which := r.Throttle, quota.ConsumerByteRate
	var now time.Time
	user := ""
	if r.Key == kmsg.Produce.Int16() && q.Produce.Enabled() {
		now = time.Now()
		user = quota.UserOf(r.Principal)
		if t := q.Produce.Record(user, r.ClientID, float64(r.Size), now); t > d {
			d, which = t, quota.ProducerByteRate
		}
	}
	if !began.IsZero() && !fromFollower(r) {
		if now.IsZero() {
			now = time.Now()
			user = quota.UserOf(r.Principal)
		}
		pct := float64(now.Sub(began).Nanoseconds()) * 100 / 1e9
		if t := q.Request.Record(user, r.ClientID, pct, now); t > d {
			d, which = t, quota.RequestPercentage
		}
	}
	if d <= 0 {
		return
	}
	ms := d.Milliseconds()
	if ms > 1<<31-1 {
		ms = 1<<31 - 1
	}
	if tr, ok := resp.(kmsg.SetThrottleResponse); ok {
		tr.SetThrottle(int32(ms))
	}
	c.s.metrics.throttled.WithLabelValues(which).Inc()
	c.s.metrics.throttleSeconds.WithLabelValues(which).Add(d.Seconds())
	until := time.Now().Add(d).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// fromFollower reports a request a broker sends as a partition's follower
// (its replica id set): never throttled, as Kafka exempts cluster actions.
func fromFollower(r *Request) bool {
	if req, ok := r.Kmsg.(*kmsg.OffsetForLeaderEpochRequest); ok {
		return req.ReplicaID >= 0
	}
	return false
}

// waitMuted holds the read loop while the connection is throttled.
func (c *conn) waitMuted() error {
	u := c.mutedUntil.Load()
	if u == 0 {
		return nil
	}
	d := time.Until(time.Unix(0, u))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// fetchQuota applies consumer_byte_rate to a consumer's Fetch: it caps
// the request's max bytes at what the quota allows in one window (as
// Kafka does) and returns a function to call with the reply before it is
// sent, which records its bytes and, when the client is over its quota,
// returns an empty reply with throttle_time_ms set in its place (Kafka
// answers a throttled fetch with no data and does not count it).
func (s *Server) fetchQuota(r *Request, req *kmsg.FetchRequest) func(*fetchReply) *fetchReply {
	if req.ReplicaID >= 0 || !s.quotas.Fetch.Enabled() {
		return nil
	}
	user := quota.UserOf(r.Principal)
	if maxB := s.quotas.Fetch.MaxValueInWindow(user, r.ClientID); maxB < float64(req.MaxBytes) || req.MaxBytes <= 0 {
		req.MaxBytes = int32(min(maxB, 1<<31-1))
	}
	return func(reply *fetchReply) *fetchReply {
		n := float64(reply.recordBytes())
		now := time.Now()
		d := s.quotas.Fetch.Record(user, r.ClientID, n, now)
		if d <= 0 {
			return reply
		}
		s.quotas.Fetch.Unrecord(user, r.ClientID, n, now)
		reply.release()
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		empty := &fetchReply{FetchResponse: resp}
		ms := min(d.Milliseconds(), 1<<31-1)
		resp.ThrottleMillis = int32(ms)
		r.Throttle = d
		return empty
	}
}

// recordBytes is the size of the records in the reply.
func (f *fetchReply) recordBytes() int64 {
	var n int64
	for _, ps := range f.srcs {
		for _, src := range ps {
			if src != nil {
				n += src.Len()
			}
		}
	}
	return n
}
