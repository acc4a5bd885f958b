package syslog

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var now = time.Date(2024, 3, 10, 12, 0, 0, 0, time.UTC)

func TestParse5424(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Message
	}{
		{ // RFC 5424 section 6.5, example 1 (BOM before MSG)
			"<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xef\xbb\xbf'su root' failed for lonvick on /dev/pts/8",
			Message{Format: RFC5424, Priority: 34, Version: 1, Timestamp: time.Date(2003, 10, 11, 22, 14, 15, 3e6, time.UTC),
				Hostname: "mymachine.example.com", AppName: "su", MsgID: "ID47", Message: "'su root' failed for lonvick on /dev/pts/8"},
		},
		{ // example 3: structured data, escapes
			`<165>1 2003-10-11T22:14:15.003000-07:00 mymachine.example.com evntslog 1234 ID47 [exampleSDID@32473 iut="3" eventSource="Appli\"cation\]" eventID="1011"][examplePriority@32473 class="high\\x"] An application event`,
			Message{Format: RFC5424, Priority: 165, Version: 1, Timestamp: time.Date(2003, 10, 11, 22, 14, 15, 3e6, time.FixedZone("", -7*3600)),
				Hostname: "mymachine.example.com", AppName: "evntslog", ProcID: "1234", MsgID: "ID47",
				StructuredData: []SDElement{
					{ID: "exampleSDID@32473", Params: []SDParam{{"iut", "3"}, {"eventSource", `Appli"cation]`}, {"eventID", "1011"}}},
					{ID: "examplePriority@32473", Params: []SDParam{{"class", `high\x`}}},
				},
				Message: "An application event"},
		},
		{ // all nil, no MSG
			"<0>1 - - - - - -",
			Message{Format: RFC5424, Priority: 0, Version: 1},
		},
		{ // SD without MSG, trailing LF dropped
			"<13>1 - h a p m [id]\n",
			Message{Format: RFC5424, Priority: 13, Version: 1, Hostname: "h", AppName: "a", ProcID: "p", MsgID: "m",
				StructuredData: []SDElement{{ID: "id"}}},
		},
	}
	for _, c := range cases {
		got := Parse([]byte(c.in), now)
		if !got.Timestamp.Equal(c.want.Timestamp) {
			t.Errorf("%q: timestamp %v, want %v", c.in, got.Timestamp, c.want.Timestamp)
		}
		got.Timestamp, c.want.Timestamp = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.in, got, c.want)
		}
	}
}

func TestParse3164(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Message
	}{
		{ // RFC 3164 section 5.4 example
			"<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
			Message{Format: RFC3164, Priority: 34, Timestamp: time.Date(2023, 10, 11, 22, 14, 15, 0, time.UTC),
				Hostname: "mymachine", AppName: "su", Message: "'su root' failed for lonvick on /dev/pts/8"},
		},
		{ // pid, space-padded day
			"<13>Mar  3 01:02:03 web-1 nginx[4321]: GET / 200",
			Message{Format: RFC3164, Priority: 13, Timestamp: time.Date(2024, 3, 3, 1, 2, 3, 0, time.UTC),
				Hostname: "web-1", AppName: "nginx", ProcID: "4321", Message: "GET / 200"},
		},
		{ // no hostname (local socket style)
			"<30>Mar 10 11:00:00 sshd[99]: Accepted publickey",
			Message{Format: RFC3164, Priority: 30, Timestamp: time.Date(2024, 3, 10, 11, 0, 0, 0, time.UTC),
				AppName: "sshd", ProcID: "99", Message: "Accepted publickey"},
		},
		{ // RFC 3339 timestamp (rsyslog)
			"<14>2024-03-10T11:59:00.5+01:00 host app: hi",
			Message{Format: RFC3164, Priority: 14, Timestamp: time.Date(2024, 3, 10, 10, 59, 0, 5e8, time.UTC),
				Hostname: "host", AppName: "app", Message: "hi"},
		},
		{ // no timestamp: everything is the message (tag still found)
			"<13>kernel: oops",
			Message{Format: RFC3164, Priority: 13, AppName: "kernel", Message: "oops"},
		},
		{ // plain text after PRI
			"<13>just some words",
			Message{Format: RFC3164, Priority: 13, Message: "just some words"},
		},
	}
	for _, c := range cases {
		got := Parse([]byte(c.in), now)
		if !got.Timestamp.Equal(c.want.Timestamp) {
			t.Errorf("%q: timestamp %v, want %v", c.in, got.Timestamp, c.want.Timestamp)
		}
		got.Timestamp, c.want.Timestamp = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.in, got, c.want)
		}
	}
	// A December message received in January is last year's.
	m := Parse([]byte("<13>Dec 31 23:59:59 h a: x"), time.Date(2024, 1, 1, 0, 0, 5, 0, time.UTC))
	if m.Timestamp.Year() != 2023 {
		t.Errorf("year inference: %v", m.Timestamp)
	}
}

func TestParseUnparsedKeepsEverything(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":                                       "empty message",
		"no pri at all":                          "no PRI",
		"<>x":                                    "bad PRI",
		"<192>x":                                 "above 191",
		"<013>x":                                 "leading zero",
		"<13>1 2024-99-99T00:00:00Z h a p m - x": "TIMESTAMP",
		"<13>1 - h a p m [id x=1] msg":           "want =\"",
		"<13>1 - h a p m [id x=\"1] msg":         "no closing quote",
		"<13>1 - h":                              "ends before APP-NAME",
		"<13>1 - h a p m junk":                   "STRUCTURED-DATA",
		"<13>1 - " + strings.Repeat("h", 256) + " a p m -":  "HOSTNAME is 256",
		"<13>1 - h a p m [" + strings.Repeat("i", 33) + "]": "longer than 32",
		"<13>1 - h a p m [id]x":                             "want a space",
		"\xff\xfe<13>binary":                                "no PRI",
	}
	for in, reason := range cases {
		m := Parse([]byte(in), now)
		if m.Format != Unparsed || !strings.Contains(m.ParseError, reason) {
			t.Errorf("%q: format %v, parse error %q, want one containing %q", in, m.Format, m.ParseError, reason)
		}
		if !utf8.ValidString(m.Message) || (utf8.ValidString(in) && m.Message != in) {
			t.Errorf("%q: message %q is not the input", in, m.Message)
		}
	}
	// The PRI survives a broken RFC 5424 body.
	if m := Parse([]byte("<165>1 - h a p m junk"), now); m.Facility() != 20 || m.Severity() != 5 {
		t.Errorf("facility/severity of a broken message: %d/%d", m.Facility(), m.Severity())
	}
}

func TestFraming(t *testing.T) {
	t.Parallel()
	in := "<13>1 - h a p m - one\n" + // LF
		"23 <13>1 - h a p m - two\nX" + // octet counted, the count includes an LF inside
		"<13>three\r\n" + // CRLF
		"5 <13>4" + // octet counted, no LF after
		"42is the answer\n" + // digits then no space: a line
		strings.Repeat("y", 100) + "\n" + // too long: cut to 50
		"60 " + strings.Repeat("z", 60) + // octet counted, too long: cut to 50
		"last without LF"
	fr := newFrameReader(strings.NewReader(in), 50)
	type frame struct {
		msg string
		cut bool
	}
	var got []frame
	for {
		b, cut, err := fr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, frame{string(b), cut})
	}
	want := []frame{
		{"<13>1 - h a p m - one", false},
		{"<13>1 - h a p m - two\nX", false},
		{"<13>three", false},
		{"<13>4", false},
		{"42is the answer", false},
		{strings.Repeat("y", 50), true},
		{strings.Repeat("z", 50), true},
		{"last without LF", false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("frames:\n got %+v\nwant %+v", got, want)
	}
	// A connection closed inside an octet-counted frame is an error, not
	// a short message.
	fr = newFrameReader(strings.NewReader("100 <13>short"), 1000)
	if _, _, err := fr.next(); err == nil || err == io.EOF {
		t.Errorf("short frame: %v", err)
	}
}

func TestFramingLongLineAcrossBuffer(t *testing.T) {
	t.Parallel()
	// Lines longer than the bufio buffer (64 KiB) are read in chunks.
	long := bytes.Repeat([]byte("a"), 200<<10)
	in := append(append([]byte("<13>"), long...), "\n<13>next\n"...)
	fr := newFrameReader(bytes.NewReader(in), 300<<10)
	b, cut, err := fr.next()
	if err != nil || cut || len(b) != 4+200<<10 {
		t.Fatalf("long line: %d bytes, cut %v, %v", len(b), cut, err)
	}
	b, _, _ = fr.next()
	if string(b) != "<13>next" {
		t.Fatalf("after the long line: %q", b)
	}
}
