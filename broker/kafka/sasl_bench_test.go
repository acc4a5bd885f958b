package kafka

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
	"go.uber.org/zap"
)

// BenchmarkSCRAMAuth measures authentications per second over new
// connections: each op dials the SASL_PLAINTEXT listener, sends
// ApiVersions, SaslHandshake and the two SaslAuthenticate steps of
// SCRAM-SHA-512 (4096 iterations), then closes. The baseline ("plaintext")
// dials the PLAINTEXT listener and sends ApiVersions only. The clients
// (one per GOMAXPROCS, in the same process) reuse one xdg-go/scram
// client, which caches the salted password: PBKDF2 is the client's cost,
// paid once; the broker's per-authentication work is a credential lookup,
// a nonce, and a few HMACs.
func BenchmarkSCRAMAuth(b *testing.B) {
	// No log observer: it would keep a line per authentication.
	sb := startSASLBroker(b, saslConfigs(), func(c *Config) { c.Logger = zap.NewNop() })
	sb.addScram(b, kadm.ScramSha512, "alice", "alice-secret")
	cl, err := scram.SHA512.NewClient("alice", "alice-secret", "")
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, addr string, auth bool) {
		var failures atomic.Int64
		b.SetParallelism(8) // clients wait on round trips: keep the broker busy
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := benchLogin(addr, auth, cl); err != nil {
					failures.Add(1)
					b.Error(err)
				}
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "conns/s")
		if failures.Load() > 0 {
			b.Fatalf("%d failed", failures.Load())
		}
	}
	b.Run("plaintext", func(b *testing.B) { run(b, sb.addr, false) })
	b.Run("SCRAM-SHA-512", func(b *testing.B) { run(b, sb.listenerAddr("SASL_PLAINTEXT"), true) })
}

// benchLogin is one connection: ApiVersions, then (auth) a SCRAM login.
func benchLogin(addr string, auth bool, cl *scram.Client) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := &benchConn{c: c}
	if _, err := r.roundTrip(kmsg.NewPtrApiVersionsRequest()); err != nil {
		return err
	}
	if !auth {
		return nil
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "SCRAM-SHA-512"
	if _, err := r.roundTrip(hs); err != nil {
		return err
	}
	conv := cl.NewConversation()
	msg, _ := conv.Step("")
	for !conv.Done() {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, []byte(msg)
		resp, err := r.roundTrip(req)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			return kerr.ErrorForCode(ar.ErrorCode)
		}
		if msg, err = conv.Step(string(ar.SASLAuthBytes)); err != nil {
			return err
		}
	}
	return nil
}

// benchConn is rawConn without a testing.T (for RunParallel goroutines).
type benchConn struct {
	c    net.Conn
	corr int32
}

func (r *benchConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	r.corr++
	if _, err := r.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, r.corr)); err != nil {
		return nil, err
	}
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, int(sz[0])<<24|int(sz[1])<<16|int(sz[2])<<8|int(sz[3]))
	if _, err := io.ReadFull(r.c, buf); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := buf[4:]
	if resp.IsFlexible() && req.Key() != 18 {
		body = body[1:]
	}
	return resp, resp.ReadFrom(body)
}
