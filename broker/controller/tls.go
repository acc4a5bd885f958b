package controller

import (
	"context"
	"net"
	"time"

	"go.uber.org/zap"

	"weir/broker/internal/repeatlog"
	"weir/broker/tlsconf"
)

// The controller port over TLS (Config.TLS, the controller listener's
// ssl.* settings as broker/tlsconf reads them): every connection, Raft
// or controller RPC, handshakes first; the protocol byte follows inside
// the TLS stream. The listener verifies client certificates as its
// ssl.client.auth says (required: a peer without a certificate signed by
// the trust store cannot join the quorum), and this node dials the other
// voters with its own key store as the client certificate. New
// connections take the stores in use, so a reload applies to them.

const defaultHandshakeTimeout = 10 * time.Second

// peerTLS is the TLS side of the controller port.
type peerTLS struct {
	srv     *tlsconf.Server
	timeout time.Duration
	warn    *repeatlog.Limiter
	log     *zap.Logger
	// authorize, if set, must accept the peer's principal.
	authorize func(principal string) bool
}

func newPeerTLS(srv *tlsconf.Server, timeout time.Duration, lg *zap.Logger) *peerTLS {
	if timeout <= 0 {
		timeout = defaultHandshakeTimeout
	}
	return &peerTLS{srv: srv, timeout: timeout, warn: repeatlog.New(lg, zap.WarnLevel, 0, nil), log: lg}
}

// accept runs the server side of the handshake of an accepted
// connection; a refused peer is logged (rate-limited per host) with the
// certificate it presented.
func (p *peerTLS) accept(ctx context.Context, c net.Conn) (net.Conn, bool) {
	remote := c.RemoteAddr().String()
	tc, principal, err := p.srv.AcceptHandshake(ctx, c, p.timeout)
	host, _, _ := net.SplitHostPort(remote)
	if err != nil {
		p.warn.Log("accept:"+host, err.Error(), "controller connection refused: TLS handshake failed (failed authentication)",
			zap.String("host", host), zap.String("remote", remote), zap.String("principal", tlsconf.RefusedPeer(err)), zap.Error(err))
		return nil, false
	}
	if p.authorize != nil && !p.authorize(principal) {
		tc.Close()
		p.warn.Log("accept:"+host, "unauthorized:"+principal, "controller connection refused: the principal is not authorized (with an authorizer, the controller port takes super.users only)",
			zap.String("host", host), zap.String("remote", remote), zap.String("principal", principal))
		return nil, false
	}
	p.warn.End("accept:" + host)
	p.log.Debug("controller connection authenticated", zap.String("remote", remote), zap.String("principal", principal))
	return tc, true
}

// dialer wraps dial with the client side of the handshake; a failure is
// logged (rate-limited per address).
func (p *peerTLS) dialer(dial DialFunc) DialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := dial(ctx, addr)
		if err != nil {
			return nil, err
		}
		tc, err := p.srv.DialHandshake(ctx, c, addr, p.timeout, func(err error) {
			p.warn.Log("dial:"+addr, err.Error(), "connecting to a controller failed: TLS handshake failed",
				zap.String("addr", addr), zap.String("principal", tlsconf.RefusedPeer(err)), zap.Error(err))
		})
		return tc, err
	}
}
