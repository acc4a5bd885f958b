package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// SSLEndpointIdentificationAlgorithm is Kafka's setting for the client
// side: "https" (the default) checks that the server's certificate names
// the host dialed; "" checks only that it chains to the trust store.
const SSLEndpointIdentificationAlgorithm = "ssl.endpoint.identification.algorithm"

// PeerCertError is a peer certificate refused at the handshake: it does
// not chain to the trust store, has expired, or is not for the use asked.
// Subject is the certificate's subject DN, for logs (never key material).
type PeerCertError struct {
	Subject string
	Err     error
}

func (e *PeerCertError) Error() string {
	return fmt.Sprintf("certificate of %s refused: %v", e.Subject, e.Err)
}

func (e *PeerCertError) Unwrap() error { return e.Err }

// verifyPeer checks a peer's certificate chain against pool (nil: the
// system roots) for usage, the way crypto/tls does, and names the
// certificate's subject when it refuses it.
func verifyPeer(raw [][]byte, pool *x509.CertPool, usage x509.ExtKeyUsage, host string) error {
	if len(raw) == 0 {
		return nil // crypto/tls refuses a missing certificate when it must
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("peer certificate does not parse: %w", err)
		}
		certs = append(certs, c)
	}
	opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: host}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		dn, derr := SubjectDN(certs[0])
		if derr != nil {
			dn = certs[0].Subject.String()
		}
		return &PeerCertError{Subject: dn, Err: err}
	}
	return nil
}

// ClientConfig returns the configuration of a connection this broker
// opens to another broker's listener of the same name (replication to the
// inter-broker listener, Raft and controller RPCs to the controller
// listener), as Kafka's inter-broker clients use the listener's ssl.*
// settings: the key store in use is the client certificate, the trust
// store verifies the server (the system roots without one), and with
// ssl.endpoint.identification.algorithm=https (the default) the server's
// certificate must name host. Each call takes the stores in use at that
// moment, so new connections follow a reload.
func (s *Server) ClientConfig(host string) *tls.Config {
	m := s.cur.Load()
	cert := m.cert
	c := &tls.Config{
		MinVersion:   s.base.MinVersion,
		MaxVersion:   s.base.MaxVersion,
		CipherSuites: s.base.CipherSuites,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &cert, nil
		},
		// Verified here rather than by crypto/tls, to name the refused
		// certificate's subject in the error (and so in the logs).
		InsecureSkipVerify: true,
	}
	if !s.cfg.VerifyHostname {
		host = ""
	}
	pool := m.pool
	c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("the server sent no certificate")
		}
		return verifyPeer(raw, pool, x509.ExtKeyUsageServerAuth, host)
	}
	return c
}

// DialHandshake runs the client side of a TLS handshake over nc (dialed
// to addr) with ClientConfig, within timeout; nc is closed on failure.
// refused, if not nil, is called with the error when the handshake fails
// and when the peer refuses this node's certificate after it: with TLS
// 1.3 the server's verdict arrives as an alert at the first read.
func (s *Server) DialHandshake(ctx context.Context, nc net.Conn, addr string, timeout time.Duration, refused func(error)) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	tc := tls.Client(nc, s.ClientConfig(host))
	if err := handshake(ctx, tc, timeout); err != nil {
		nc.Close()
		err = fmt.Errorf("TLS handshake with %s (listener %s): %w", addr, s.cfg.Listener, err)
		if refused != nil {
			refused(err)
		}
		return nil, err
	}
	if refused == nil {
		return tc, nil
	}
	own := ""
	if leaf := s.cur.Load().cert.Leaf; leaf != nil {
		if own, err = SubjectDN(leaf); err != nil {
			own = leaf.Subject.String()
		}
	}
	return &alertConn{Conn: tc, addr: addr, listener: s.cfg.Listener, own: own, refused: refused}, nil
}

// alertConn reports a TLS alert the peer sends after the handshake (its
// refusal of this node's certificate).
type alertConn struct {
	*tls.Conn
	addr, listener string
	own            string // this node's certificate subject
	refused        func(error)
	once           sync.Once
}

func (c *alertConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	var oe *net.OpError
	if err != nil && errors.As(err, &oe) && oe.Op == "remote error" {
		c.once.Do(func() {
			c.refused(fmt.Errorf("TLS handshake with %s (listener %s): the peer refused this node's certificate (%s): %w", c.addr, c.listener, c.own, err))
		})
	}
	return n, err
}

// AcceptHandshake runs the server side of a TLS handshake over an
// accepted connection within timeout and returns the connection and its
// principal (see Principal). A peer that sends no TLS, no certificate
// when ssl.client.auth=required, or one that does not chain to the trust
// store fails here; nc is closed on failure.
func (s *Server) AcceptHandshake(ctx context.Context, nc net.Conn, timeout time.Duration) (*tls.Conn, string, error) {
	tc := tls.Server(nc, s.TLSConfig())
	err := handshake(ctx, tc, timeout)
	principal := ""
	if err == nil {
		principal, err = s.Principal(tc.ConnectionState())
	}
	if err != nil {
		nc.Close()
		return nil, "", err
	}
	return tc, principal, nil
}

// handshake runs tc's handshake within timeout; a peer that stays silent
// gets "no TLS handshake within ...".
func handshake(ctx context.Context, tc *tls.Conn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tc.SetDeadline(time.Now().Add(timeout))
	err := tc.HandshakeContext(ctx)
	tc.SetDeadline(time.Time{})
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)) {
		return fmt.Errorf("no TLS handshake within %s", timeout)
	}
	return err
}

// RefusedPeer describes a failed handshake for logs: the subject of the
// certificate the peer sent ("" when none is known) and a short reason.
func RefusedPeer(err error) (subject string) {
	var pe *PeerCertError
	if errors.As(err, &pe) {
		return pe.Subject
	}
	if strings.Contains(err.Error(), "didn't provide a certificate") {
		return "(no certificate)"
	}
	return ""
}

// Config returns the configuration the server was made from.
func (s *Server) Config() *Config { return s.cfg }
