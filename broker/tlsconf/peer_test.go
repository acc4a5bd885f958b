package tlsconf

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"weir/broker/tlsconf/tlstest"
)

// peerServer is a Server of listener INTERNAL with ssl.client.auth=required
// presenting a certificate of issuer for hosts, trusting trust.
func peerServer(t *testing.T, issuer, trust *tlstest.CA, cn string, hosts []string, extra map[string]string) *Server {
	t.Helper()
	dir := t.TempDir()
	s := map[string]string{
		SSLKeystoreLocation:   tlstest.Write(t, dir, "k.pem", issuer.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: cn}, Hosts: hosts}).KeyStore()),
		SSLTruststoreLocation: tlstest.Write(t, dir, "ca.pem", trust.PEM),
		SSLClientAuth:         "required",
	}
	for k, v := range extra {
		s[k] = v
	}
	cfg, err := Parse("INTERNAL", s, s)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// pair runs a handshake between client (dialing addr) and server over a
// pipe and returns the principal the server saw and both sides' errors (the client's includes a refusal
// seen at its first read, with TLS 1.3).
func pair(t *testing.T, client, server *Server, addr string) (principal string, clientErr, serverErr error) {
	t.Helper()
	a, b := tcpPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var tc net.Conn
		tc, principal, serverErr = server.AcceptHandshake(context.Background(), b, 2*time.Second)
		if serverErr == nil {
			tc.Write([]byte{1})
			tc.Close()
		}
	}()
	var refused error
	cc, err := client.DialHandshake(context.Background(), a, addr, 2*time.Second, func(err error) { refused = err })
	if err == nil {
		var buf [1]byte
		_, err = cc.Read(buf[:])
		cc.Close()
	}
	<-done
	if refused != nil {
		return principal, refused, serverErr
	}
	return principal, err, serverErr
}

// TestPeerHandshake: brokers dialing each other present their key store
// as the client certificate; a certificate of another CA is refused by
// the server with its subject named; the server's certificate must name
// the host dialed unless ssl.endpoint.identification.algorithm is empty.
func TestPeerHandshake(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster CA")
	server := peerServer(t, ca, ca, "broker1", nil, nil)
	client := peerServer(t, ca, ca, "broker2", nil, nil)
	if p, cerr, serr := pair(t, client, server, "127.0.0.1:9093"); cerr != nil || serr != nil || p != "User:CN=broker2" {
		t.Fatalf("trusted peers: client %v, server %v, principal %q", cerr, serr, p)
	}

	rogue := peerServer(t, tlstest.NewCA(t, "rogue CA"), ca, "rogue", nil, nil)
	_, cerr, serr := pair(t, rogue, server, "127.0.0.1:9093")
	var pe *PeerCertError
	if !errors.As(serr, &pe) || pe.Subject != "CN=rogue" || RefusedPeer(serr) != "CN=rogue" {
		t.Fatalf("server's error for another CA's client: %v", serr)
	}
	if cerr == nil || !strings.Contains(cerr.Error(), "the peer refused this node's certificate (CN=rogue)") {
		t.Fatalf("client refused by the server: %v", cerr)
	}
	// The client refuses a server of another CA, naming it.
	if _, cerr, _ := pair(t, client, rogue, "127.0.0.1:9093"); RefusedPeer(cerr) != "CN=rogue" {
		t.Fatalf("client's error for another CA's server: %v", cerr)
	}

	// Host names: the server's certificate names only other.example.
	named := peerServer(t, ca, ca, "broker3", []string{"other.example"}, nil)
	if _, cerr, _ := pair(t, client, named, "127.0.0.1:9093"); cerr == nil || !strings.Contains(cerr.Error(), "127.0.0.1") {
		t.Fatalf("server certificate without the host dialed: %v", cerr)
	}
	noHostCheck := peerServer(t, ca, ca, "broker2", nil, map[string]string{SSLEndpointIdentificationAlgorithm: ""})
	if _, cerr, serr := pair(t, noHostCheck, named, "127.0.0.1:9093"); cerr != nil || serr != nil {
		t.Fatalf("ssl.endpoint.identification.algorithm empty: client %v, server %v", cerr, serr)
	}
	s := map[string]string{SSLKeystoreLocation: "x", SSLEndpointIdentificationAlgorithm: "ldap"}
	if _, err := Parse("INTERNAL", s, s); err == nil || !strings.Contains(err.Error(), SSLEndpointIdentificationAlgorithm) {
		t.Fatalf("bad %s: %v", SSLEndpointIdentificationAlgorithm, err)
	}

	// A peer that sends nothing is cut after the timeout.
	a, b := tcpPair(t)
	defer a.Close()
	start := time.Now()
	_, _, err := server.AcceptHandshake(context.Background(), b, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "no TLS handshake within 200ms") || time.Since(start) > 5*time.Second {
		t.Fatalf("silent peer: %v after %v", err, time.Since(start))
	}
}

// tcpPair is both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	return client, server
}
