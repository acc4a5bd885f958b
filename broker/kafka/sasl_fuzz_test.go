package kafka

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzSASLConn writes arbitrary bytes to a connection of a real
// SASL_PLAINTEXT listener, before and during authentication: whatever
// they are, the connection is served or closed, never a panic or a hang,
// and no frame larger than sasl.server.max.receive.size is read. Seeds
// are a whole PLAIN login (v1 and bare v0 tokens), SCRAM first messages
// and a huge size prefix; the corpus is in testdata/fuzz/FuzzSASLConn.
func FuzzSASLConn(f *testing.F) {
	frame := func(v int16, req kmsg.Request) []byte {
		req.SetVersion(v)
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)
	}
	hs := func(v int16, mech string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Mechanism = mech
		return frame(v, r)
	}
	auth := func(tok string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SASLAuthBytes = []byte(tok)
		return frame(2, r)
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	raw := func(tok string) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...) }
	f.Add(cat(frame(3, kmsg.NewPtrApiVersionsRequest()), hs(1, "PLAIN"), auth("\x00admin\x00admin-secret"), frame(12, kmsg.NewPtrMetadataRequest())))
	f.Add(cat(hs(0, "PLAIN"), raw("\x00admin\x00admin-secret"), frame(12, kmsg.NewPtrMetadataRequest())))
	f.Add(cat(hs(1, "SCRAM-SHA-512"), auth("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL")))
	f.Add(cat(hs(0, "SCRAM-SHA-256"), raw("n,,n=alice,r=abc"), raw("c=biws,r=abc,p=AAAA")))
	f.Add(cat(hs(1, "GSSAPI")))
	f.Add([]byte{0x06, 0x40, 0x00, 0x00, 0, 0, 0, 0})
	b := startSASLBroker(f, saslConfigs())
	var bl *boundListener
	for _, l := range b.srv.bound {
		if l.cfg.Name == "SASL_PLAINTEXT" {
			bl = l
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, peer := net.Pipe()
		c := newConn(b.srv, bl, a)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.serve()
		}()
		go io.Copy(io.Discard, peer)
		peer.SetWriteDeadline(time.Now().Add(5 * time.Second))
		peer.Write(in)
		peer.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("connection not closed 10s after the client closed")
		}
	})
}
