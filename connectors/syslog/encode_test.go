package syslog

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"weir/schemas"
)

// native is e in goavro's native form, as schemas.Encoder takes it.
func native(e *Event) map[string]any {
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return map[string]any{"string": s}
	}
	m := map[string]any{
		"received": e.Received, "format": e.Format.String(), "message": e.Message.Message,
		"truncated": e.Truncated, "peer": e.Peer, "transport": e.Transport,
		"hostname": opt(e.Hostname), "app_name": opt(e.AppName), "proc_id": opt(e.ProcID), "msg_id": opt(e.MsgID),
		"parse_error": opt(e.ParseError), "timestamp": nil, "facility": nil, "severity": nil, "structured_data": nil,
	}
	if !e.Timestamp.IsZero() {
		m["timestamp"] = map[string]any{"long.timestamp-micros": e.Timestamp}
	}
	if e.Priority >= 0 {
		m["facility"] = map[string]any{"int": int32(e.Facility())}
		m["severity"] = map[string]any{"int": int32(e.Severity())}
	}
	if e.StructuredData != nil {
		sd := map[string]any{}
		for _, el := range e.StructuredData {
			ps, _ := sd[el.ID].(map[string]any)
			if ps == nil {
				ps = map[string]any{}
				sd[el.ID] = ps
			}
			for _, p := range el.Params {
				ps[p.Name] = p.Value
			}
		}
		m["structured_data"] = map[string]any{"map": sd}
	}
	return m
}

func checkAvro(t testing.TB, e *Event) {
	s, err := schemas.Parse(EventSchema)
	if err != nil {
		t.Fatal(err)
	}
	want, err := schemas.NewEncoder(s).Append(nil, native(e))
	if err != nil {
		t.Fatalf("schemas.Encoder: %v", err)
	}
	got := appendEventAvro(nil, e)
	if bytes.Equal(got, want) {
		return
	}
	// Map entries may come in any order: compare the decoded values.
	dec, err := schemas.NewDecoder(s, s)
	if err != nil {
		t.Fatal(err)
	}
	gv, gerr := dec.Decode(got)
	wv, werr := dec.Decode(want)
	if gerr != nil || werr != nil || !reflect.DeepEqual(gv, wv) {
		t.Fatalf("hand-unrolled Avro differs from schemas.Encoder for %+v:\n got %v (%v)\nwant %v (%v)", e, gv, gerr, wv, werr)
	}
}

func TestAvroMatchesSchemasEncoder(t *testing.T) {
	t.Parallel()
	recv := time.Date(2024, 3, 10, 12, 0, 0, 123e6, time.UTC)
	for _, in := range []string{
		`<165>1 2003-10-11T22:14:15.003000-07:00 mymachine.example.com evntslog 1234 ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"][exampleSDID@32473 more="x" iut="4"] An application event`,
		"<0>1 - - - - - [a]",
		"<34>Oct 11 22:14:15 mymachine su: 'su root' failed",
		"garbage \xff",
		"",
	} {
		e := &Event{Message: Parse([]byte(in), now), Received: recv, Peer: "127.0.0.1:5000", Transport: "tcp"}
		checkAvro(t, e)
		e.Truncated = true
		checkAvro(t, e)
		// JSON encoding is valid JSON with the same message.
		var m map[string]any
		if err := json.Unmarshal(JSONEncoder{}.Append(nil, e), &m); err != nil {
			t.Fatalf("%q: JSON: %v", in, err)
		}
		if m["message"] != e.Message.Message || m["format"] != e.Format.String() {
			t.Fatalf("%q: JSON %v", in, m)
		}
	}
}

// FuzzParse: Parse never panics, never loses the input, always yields
// valid UTF-8 and an encoding schemas.Encoder agrees with.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xef\xbb\xbf'su root' failed",
		`<165>1 2003-10-11T22:14:15.003000-07:00 host app 1234 ID47 [id@1 a="x\"y\]z" b="2"][p@1 c="3"] msg`,
		"<34>Oct 11 22:14:15 mymachine su: 'su root' failed",
		"<13>Mar  3 01:02:03 web-1 nginx[4321]: GET / 200",
		"<14>2024-03-10T11:59:00.5+01:00 host app: hi",
		"<13>Dec 31 23:59:59.123456 2023 host app[1]: x",
		"<13>1 - h a p m [id x=\"1] msg",
		"no pri",
		"<192>x",
		"<13>\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	s, err := schemas.Parse(EventSchema)
	if err != nil {
		f.Fatal(err)
	}
	dec, err := schemas.NewDecoder(s, s)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m := Parse(b, now)
		for _, str := range []string{m.Message, m.Hostname, m.AppName, m.ProcID, m.MsgID, m.ParseError} {
			if !utf8Valid(str) {
				t.Fatalf("invalid UTF-8 in %+v", m)
			}
		}
		if m.Format == Unparsed {
			if m.ParseError == "" {
				t.Fatal("unparsed without a reason")
			}
			if want := validString(bytes.TrimRight(b, "\r\n\x00")); m.Message != want {
				t.Fatalf("unparsed message %q is not the input %q", m.Message, want)
			}
		}
		if m.Format == RFC3164 && !strings.Contains(validString(b), m.Message) {
			t.Fatalf("RFC 3164 message %q is not part of the input", m.Message)
		}
		e := &Event{Message: m, Received: now, Peer: "p", Transport: "udp"}
		v := appendEventAvro(nil, e)
		got, err := dec.Decode(v)
		if err != nil {
			t.Fatalf("decoding our Avro: %v", err)
		}
		if got.(map[string]any)["message"] != m.Message {
			t.Fatalf("message round trip: %v", got)
		}
		if m.Timestamp.IsZero() || (m.Timestamp.Year() > 0 && m.Timestamp.Year() < 10000) {
			checkAvro(t, e)
		}
	})
}

// FuzzFrames: the TCP framing never panics or returns more than max
// bytes, and every input byte of LF-framed text ends up in a message.
func FuzzFrames(f *testing.F) {
	f.Add([]byte("<13>1 - h a p m - one\n23 <13>1 - h a p m - two\nX<13>three\r\n"), 50)
	f.Add([]byte("5 <13>4"), 10)
	f.Add([]byte("99999999999 x\n"), 8)
	f.Add([]byte("0 x\n12"), 480)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		fr := newFrameReader(bytes.NewReader(b), max)
		for i := 0; i <= len(b); i++ {
			msg, _, err := fr.next()
			if err != nil {
				return
			}
			if len(msg) > max {
				t.Fatalf("message of %d bytes, max %d", len(msg), max)
			}
		}
		t.Fatal("more messages than input bytes")
	})
}

func utf8Valid(s string) bool { return validString([]byte(s)) == s }
