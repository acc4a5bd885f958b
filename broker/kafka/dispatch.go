package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler serves one decoded request. It returns the response to send, or
// nil to send none (Produce with acks=0). Kafka-level failures are error
// codes inside the response; a returned Go error means the request cannot
// be answered at all and closes the connection (and only it).
//
// The request may alias the connection's read buffer (it was decoded with
// UnsafeReadFrom): a synchronous handler must not keep any part of it
// after returning. The returned response is encoded before the buffer is
// reused, so it may alias the request.
type Handler func(s *Server, r *Request) (kmsg.Response, error)

// Request is one decoded request and where it came from.
type Request struct {
	// Ctx is cancelled when the connection closes or the server shuts
	// down: long waits (Fetch) must return early, answering with what they
	// have.
	Ctx      context.Context
	Key      int16
	Version  int16
	ClientID string
	// Kmsg is the decoded request, *kmsg.XxxRequest for Key.
	Kmsg kmsg.Request
	// Received is when the request's frame was read.
	Received time.Time
	// Remote is the peer address.
	Remote string
	// Listener is the name of the listener the client connected on: the
	// brokers it is told about are those of that listener.
	Listener string
	// Principal is the client's Kafka principal: User:ANONYMOUS, or
	// User:<name> from its TLS client certificate (ssl.principal.mapping.rules)
	// or its SASL authentication.
	Principal string
	// Size is the request's size in bytes (producer_byte_rate counts it).
	Size int32
	// Throttle is set by a handler that throttled the client itself
	// (Fetch over consumer_byte_rate): the connection is muted that long.
	Throttle time.Duration

	// c is the connection (SASL handlers change its state); closeAfter,
	// set by a handler, closes it once the response is written.
	c          *conn
	closeAfter bool
}

// api is one registered API key.
type api struct {
	key      int16
	min, max int16
	handle   Handler
	// async handlers run on their own goroutine so a long wait does not
	// hold up reading the connection's later requests; responses are still
	// written in request order.
	async bool
}

const maxAPIKey = 127

var apis [maxAPIKey + 1]*api

// register makes key served by h for versions min..max. Each NN_<api>.go
// file calls it from init; ApiVersions advertises exactly the registered
// keys and ranges. It panics on a duplicate or a range kmsg cannot encode.
func register(key, min, max int16, h Handler) { registerAPI(key, min, max, h, false) }

// registerAsync is register for handlers that may wait (Fetch long polls).
func registerAsync(key, min, max int16, h Handler) { registerAPI(key, min, max, h, true) }

func registerAPI(key, min, max int16, h Handler, async bool) {
	if key < 0 || key > maxAPIKey || apis[key] != nil {
		panic(fmt.Sprintf("kafka: API key %d registered twice or out of range", key))
	}
	req := kmsg.RequestForKey(key)
	if req == nil || min < 0 || min > max || max > req.MaxVersion() {
		panic(fmt.Sprintf("kafka: API key %d: bad version range %d..%d", key, min, max))
	}
	apis[key] = &api{key: key, min: min, max: max, handle: h, async: async}
}

// registeredAPIs returns the registrations sorted by key.
func registeredAPIs() []*api {
	var out []*api
	for _, a := range apis {
		if a != nil {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// errFrame is a request the server cannot parse: the connection closes.
var errFrame = errors.New("malformed request")

// header is a parsed request header (v0/v1 without tags, v2 with).
type header struct {
	key, version  int16
	correlationID int32
	clientID      string
	// flexible is whether the request (and so its response header) uses
	// flexible versions. Only known when the version is supported.
	flexible bool
}

// parseHeader parses the fixed part of a request header (key, version,
// correlation id, nullable client id). It does not touch tagged fields,
// which depend on whether the version is flexible; see skipHeaderTags.
func parseHeader(b []byte) (header, []byte, error) {
	r := kbin.Reader{Src: b}
	var h header
	h.key = r.Int16()
	h.version = r.Int16()
	h.correlationID = r.Int32()
	if cid := r.UnsafeNullableString(); cid != nil {
		h.clientID = *cid
	}
	if !r.Ok() {
		return h, nil, fmt.Errorf("%w: request header truncated (%d bytes)", errFrame, len(b))
	}
	return h, r.Src, nil
}

// skipHeaderTags consumes the tagged fields of a v2 request header.
func skipHeaderTags(b []byte) ([]byte, error) {
	r := kbin.Reader{Src: b}
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint()
		l := r.Uvarint()
		r.Span(int(l))
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%w: request header tagged fields truncated", errFrame)
	}
	return r.Src, nil
}

// appendResponseHeader appends the response header. Flexible responses
// carry an (empty) tag section, except ApiVersions, whose response header is
// always v0 so that clients can parse it before they know our versions.
func appendResponseHeader(dst []byte, h *header) []byte {
	dst = kbin.AppendInt32(dst, h.correlationID)
	if h.flexible && h.key != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0)
	}
	return dst
}
