package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"weir/broker/metadata"
	"weir/broker/sasl"
)

// Listener is one named Kafka listener (Kafka's listeners setting, see
// broker/listener for parsing it).
type Listener struct {
	// Name is the listener name (PLAINTEXT, SSL, INTERNAL, ...).
	Name string
	// Protocol is its security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT
	// or SASL_SSL.
	Protocol string
	// Addr is the address to listen on, host:port; port 0 picks one.
	Addr string
	// Listener, when set, is an already bound listener used instead of
	// Addr.
	Listener net.Listener
	// Advertised is the host:port given to clients that connect on this
	// listener ("" = the bound address, with an unspecified host replaced
	// by the machine's hostname; port 0 = the bound port). NoAdvertise
	// leaves the listener out of the registration (Kafka: a listener not
	// in advertised.listeners).
	Advertised  string
	NoAdvertise bool
	// Controller marks the controller listener (controller.listener.names;
	// connections the controller port hands over): DescribeCluster
	// answers the controllers there.
	Controller bool
	// TLS serves SSL listeners: the configuration of new handshakes and
	// the principal of a finished one (broker/tlsconf.Server).
	TLS TLSServer
	// SASL authenticates the clients of SASL_PLAINTEXT and SASL_SSL
	// listeners (sasl.go).
	SASL *sasl.Server
}

// TLSServer is the TLS side of an SSL listener; *tlsconf.Server
// implements it.
type TLSServer interface {
	TLSConfig() *tls.Config
	Principal(tls.ConnectionState) (string, error)
}

// anonymous is the principal of a plaintext connection.
const anonymous = "User:ANONYMOUS"

// boundListener is a listener the server accepts on.
type boundListener struct {
	cfg    Listener
	ln     net.Listener
	tlsCfg *tls.Config // nil: plaintext
	adv    metadata.Endpoint
}

// listeners returns the configured listeners: cfg.Listeners, or one
// PLAINTEXT listener on Addr (advertised as AdvertisedAddr).
func (c *Config) listeners() []Listener {
	if len(c.Listeners) > 0 {
		return c.Listeners
	}
	return []Listener{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Addr: c.Addr, Advertised: c.AdvertisedAddr}}
}

func (c *Config) validateListeners() error {
	ls := c.listeners()
	seen := map[string]bool{}
	for _, l := range ls {
		switch {
		case l.Name == "":
			return errors.New("kafka: a listener has no name")
		case seen[l.Name]:
			return fmt.Errorf("kafka: listener %s defined twice", l.Name)
		case (l.Protocol == "SSL" || l.Protocol == "SASL_SSL") && l.TLS == nil:
			return fmt.Errorf("kafka: listener %s is %s but has no TLS configuration", l.Name, l.Protocol)
		case (l.Protocol == "SASL_PLAINTEXT" || l.Protocol == "SASL_SSL") && l.SASL == nil:
			return fmt.Errorf("kafka: listener %s is %s but has no SASL configuration", l.Name, l.Protocol)
		case l.Protocol != "PLAINTEXT" && l.Protocol != "SSL" && l.Protocol != "SASL_PLAINTEXT" && l.Protocol != "SASL_SSL":
			return fmt.Errorf("kafka: listener %s: unknown security protocol %s", l.Name, l.Protocol)
		}
		seen[l.Name] = true
	}
	if c.InterBrokerListener != "" && !seen[c.InterBrokerListener] {
		return fmt.Errorf("kafka: inter-broker listener %s is not a listener", c.InterBrokerListener)
	}
	return nil
}

// bind listens on every listener not bound yet (closing them all on an
// error) and works out the advertised endpoints.
func (s *Server) bind(pre []Listener) ([]*boundListener, error) {
	var out []*boundListener
	fail := func(err error) ([]*boundListener, error) {
		for _, b := range out {
			b.ln.Close()
		}
		for _, l := range pre[len(out):] {
			if l.Listener != nil {
				l.Listener.Close()
			}
		}
		return nil, err
	}
	for _, l := range pre {
		ln := l.Listener
		if ln == nil {
			var err error
			if ln, err = net.Listen("tcp", l.Addr); err != nil {
				return fail(fmt.Errorf("kafka: listener %s: listen on %s: %w", l.Name, l.Addr, err))
			}
		}
		b := &boundListener{cfg: l, ln: ln}
		out = append(out, b)
		if l.TLS != nil && (l.Protocol == "SSL" || l.Protocol == "SASL_SSL") {
			b.tlsCfg = l.TLS.TLSConfig()
		}
		host, port, err := advertisedAddr(l.Advertised, ln.Addr())
		if err != nil {
			return fail(fmt.Errorf("kafka: listener %s: %w", l.Name, err))
		}
		b.adv = metadata.Endpoint{Listener: l.Name, Protocol: l.Protocol, Host: host, Port: port}
	}
	return out, nil
}

// registration is this broker's metadata record: Host and Port of the
// inter-broker listener (else the first), and every advertised endpoint.
func (s *Server) registration() metadata.Broker {
	b := metadata.Broker{NodeID: s.cfg.NodeID, Rack: s.cfg.Rack}
	for _, l := range s.bound {
		if l.cfg.NoAdvertise {
			continue
		}
		b.Endpoints = append(b.Endpoints, l.adv)
		if b.Host == "" || l.cfg.Name == s.cfg.InterBrokerListener {
			b.Host, b.Port = l.adv.Host, l.adv.Port
		}
	}
	if len(s.cfg.Listeners) == 0 {
		// The --kafka-addr shorthand: registered as before listeners had
		// names, served to every client whatever its listener.
		b.Endpoints = nil
	}
	return b
}

func advertisedAddr(addr string, bound net.Addr) (string, int32, error) {
	if addr == "" {
		addr = bound.String()
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("advertised address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("advertised address %q: bad port", addr)
	}
	if port == 0 {
		tcp, ok := bound.(*net.TCPAddr)
		if !ok {
			return "", 0, fmt.Errorf("advertised address %q: bad port", addr)
		}
		port = tcp.Port
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if host, err = os.Hostname(); err != nil {
			return "", 0, fmt.Errorf("listener %s is on all interfaces and the hostname is unknown (%v): set the advertised address", bound, err)
		}
	}
	return host, int32(port), nil
}

// ListenerAddrs returns the bound address of every listener by name (nil
// before Start).
func (s *Server) ListenerAddrs() map[string]net.Addr {
	if s.bound == nil {
		return nil
	}
	out := make(map[string]net.Addr, len(s.bound))
	for _, l := range s.bound {
		out[l.cfg.Name] = l.ln.Addr()
	}
	return out
}

// handshake runs the TLS handshake of a new connection on an SSL
// listener within HandshakeTimeout, and sets the connection's principal.
// A client that sends no TLS, or an untrusted, expired or missing
// (ssl.client.auth=required) certificate, fails here.
func (c *conn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		c.principal = anonymous
		return nil
	}
	d := c.s.cfg.HandshakeTimeout
	if d <= 0 {
		d = defaultHandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(c.ctx, d)
	defer cancel()
	tc.SetDeadline(time.Now().Add(d))
	err := tc.HandshakeContext(ctx)
	tc.SetDeadline(time.Time{})
	if err == nil {
		c.principal, err = c.l.cfg.TLS.Principal(tc.ConnectionState())
	}
	if err != nil {
		c.s.metrics.tlsFailures.WithLabelValues(c.l.cfg.Name).Inc()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("no TLS handshake within %s", d)
		}
		c.s.warn.Log("tls:"+c.l.cfg.Name, err.Error(), "TLS handshake failed (failed authentication)",
			zap.String("listener", c.l.cfg.Name), zap.String("remote", c.remote), zap.Error(err))
		return err
	}
	return nil
}

const defaultHandshakeTimeout = 10 * time.Second
