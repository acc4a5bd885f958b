package kafka

import (
	"encoding/binary"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"

	"weir/broker/sasl"
)

// handshake sends SaslHandshake at version v for mechanism.
func (r *rawConn) saslHandshake(v int16, mechanism string) *kmsg.SASLHandshakeResponse {
	r.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = v, mechanism
	return r.roundTrip(req).(*kmsg.SASLHandshakeResponse)
}

func (r *rawConn) saslAuthenticate(v int16, token []byte) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = v, token
	return r.roundTrip(req).(*kmsg.SASLAuthenticateResponse)
}

// scramLogin runs a whole SCRAM-SHA-512 exchange with SaslAuthenticate v,
// returning the last response.
func (r *rawConn) scramLogin(v int16, user, pass string) *kmsg.SASLAuthenticateResponse {
	r.t.Helper()
	if hs := r.saslHandshake(1, "SCRAM-SHA-512"); hs.ErrorCode != 0 {
		r.t.Fatalf("handshake: %v", kerr.ErrorForCode(hs.ErrorCode))
	}
	cl, err := scram.SHA512.NewClient(user, pass, "")
	if err != nil {
		r.t.Fatal(err)
	}
	conv := cl.NewConversation()
	first, _ := conv.Step("")
	resp := r.saslAuthenticate(v, []byte(first))
	if resp.ErrorCode != 0 {
		return resp
	}
	final, err := conv.Step(string(resp.SASLAuthBytes))
	if err != nil {
		r.t.Fatal(err)
	}
	return r.saslAuthenticate(v, []byte(final))
}

// TestSASLBadInput: what Kafka does with clients that break the SASL
// rules, each on its own connection, while a good client is served all
// along. Not parallel: it checks that a 100 MB size prefix allocates
// nothing like 100 MB (the process's allocation counter).
func TestSASLBadInput(t *testing.T) {
	b := startSASLBroker(t, saslConfigs(sasl.MaxReauthMs, "60000"), withHandshakeTimeout(time.Second))
	b.addScram(t, kadm.ScramSha512, "alice", "alice-secret")
	b.addScram(t, kadm.ScramSha512, "bob", "bob-secret")
	addr := b.listenerAddr("SASL_PLAINTEXT")
	good := dialRaw(t, addr)
	if resp := good.scramLogin(2, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
		t.Fatalf("good login: %v lifetime %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis)
	}
	metadataBrokers(t, good)

	t.Run("unknown mechanism", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.roundTrip(kmsg.NewPtrApiVersionsRequest())
		hs := r.saslHandshake(1, "GSSAPI")
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(hs.SupportedMechanisms, []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}) {
			t.Fatalf("%v %v", kerr.ErrorForCode(hs.ErrorCode), hs.SupportedMechanisms)
		}
		r.expectClosed()
	})
	t.Run("wrong password", func(t *testing.T) {
		r := dialRaw(t, addr)
		resp := r.scramLogin(1, "alice", "not-her-password")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: Invalid user credentials" {
			t.Fatalf("%v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
		r.expectClosed()
	})
	t.Run("SaslAuthenticate before SaslHandshake", func(t *testing.T) {
		r := dialRaw(t, addr)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = []byte("n,,n=alice,r=abc")
		r.write(r.frame(req))
		r.expectClosed()
	})
	t.Run("Metadata before authentication", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.write(r.frame(kmsg.NewPtrMetadataRequest()))
		r.expectClosed()
	})
	t.Run("Metadata between SaslHandshake and SaslAuthenticate", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.saslHandshake(1, "PLAIN")
		r.write(r.frame(kmsg.NewPtrMetadataRequest()))
		r.expectClosed()
	})
	t.Run("100 MB frame", func(t *testing.T) {
		r := dialRaw(t, addr)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], 100<<20)
		began := time.Now()
		r.write(size[:])
		r.write(make([]byte, 1024))
		r.expectClosed()
		runtime.ReadMemStats(&ms1)
		if d := time.Since(began); d > 2*time.Second {
			t.Fatalf("closed after %s", d)
		}
		if grown := ms1.TotalAlloc - ms0.TotalAlloc; grown > 20<<20 {
			t.Fatalf("%d MB allocated while refusing a 100 MB frame", grown>>20)
		}
	})
	t.Run("handshake never finished", func(t *testing.T) {
		r := dialRaw(t, addr)
		r.roundTrip(kmsg.NewPtrApiVersionsRequest())
		began := time.Now()
		r.expectClosed()
		if d := time.Since(began); d > 5*time.Second {
			t.Fatalf("closed after %s; the handshake timeout is 1s", d)
		}
	})
	t.Run("SaslHandshake on a PLAINTEXT listener", func(t *testing.T) {
		r := dialRaw(t, b.addr)
		if hs := r.saslHandshake(1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%v", kerr.ErrorForCode(hs.ErrorCode))
		}
		if resp := r.saslAuthenticate(1, []byte("\x00a\x00b")); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("%v", kerr.ErrorForCode(resp.ErrorCode))
		}
		metadataBrokers(t, r)
	})
	t.Run("PLAIN with bare v0 tokens", func(t *testing.T) {
		r := dialRaw(t, addr)
		if hs := r.saslHandshake(0, "PLAIN"); hs.ErrorCode != 0 {
			t.Fatalf("%v", kerr.ErrorForCode(hs.ErrorCode))
		}
		tok := []byte("\x00admin\x00admin-secret")
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
		r.write(append(frame, tok...))
		if resp, err := r.readFrame(5 * time.Second); err != nil || len(resp) != 0 {
			t.Fatalf("bare token answer %q, %v", resp, err)
		}
		metadataBrokers(t, r)
		// A bad bare token closes the connection unanswered.
		r = dialRaw(t, addr)
		r.saslHandshake(0, "PLAIN")
		tok = []byte("\x00admin\x00wrong")
		r.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
		r.expectClosed()
	})
	t.Run("re-authentication", func(t *testing.T) {
		r := dialRaw(t, addr)
		if resp := r.scramLogin(1, "alice", "alice-secret"); resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		// The same principal again: the session goes on.
		if resp := r.scramLogin(1, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
			t.Fatalf("re-authentication: %v %v, lifetime %d", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, resp.SessionLifetimeMillis)
		}
		metadataBrokers(t, r)
		// Another principal: refused, closed.
		resp := r.scramLogin(1, "bob", "bob-secret")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Cannot change principals during re-authentication from User.alice: User.bob" {
			t.Fatalf("%v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
		r.expectClosed()
	})
	t.Run("session expired", func(t *testing.T) {
		r := dialRaw(t, addr)
		if resp := r.scramLogin(1, "alice", "alice-secret"); resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		metadataBrokers(t, r)
		b.offset.Add(int64(61 * time.Second))
		defer b.offset.Add(-int64(61 * time.Second))
		r.write(r.frame(kmsg.NewPtrMetadataRequest()))
		r.expectClosed()
	})
	// The good client was served throughout.
	metadataBrokers(t, good)
	if n := len(b.auditLines()); n < 7 {
		t.Fatalf("%d audit lines: %v", n, b.auditLines())
	}
}
