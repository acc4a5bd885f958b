package syslog

import (
	"os"
	"testing"
	"time"
)

// TestEventSchemaText: the schema described once in eventSchema is, byte
// for byte, the text the syslog endpoint registered before it was described
// that way (testdata/SyslogEvent.avsc), so existing subjects keep their
// schema ids.
func TestEventSchemaText(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("testdata/SyslogEvent.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if EventSchema != string(want) {
		t.Fatalf("EventSchema:\n%s\nwant:\n%s", EventSchema, want)
	}
}

// TestJSONShape: the JSON object of an event with every field, as the
// hand-written encoder wrote it before the event was described once.
func TestJSONShape(t *testing.T) {
	t.Parallel()
	e := &Event{Message: Message{Format: RFC5424, Priority: 13, Version: 1,
		Timestamp: time.Date(2024, 3, 10, 12, 0, 0, 500_000_000, time.FixedZone("", 3600)),
		Hostname:  "h", AppName: "app", MsgID: "ID1",
		StructuredData: []SDElement{{ID: "b@1", Params: []SDParam{{"n", "2"}, {"m", "1"}, {"n", "3"}}}, {ID: "a@1"}},
		Message:        "hi \"there\"\n"},
		Received: time.Date(2024, 3, 10, 11, 0, 0, 0, time.UTC), Peer: "1.2.3.4:5", Transport: "udp"}
	e.Truncated = true
	want := `{"received":"2024-03-10T11:00:00Z","timestamp":"2024-03-10T12:00:00.5+01:00","format":"rfc5424",` +
		`"facility":1,"severity":5,"hostname":"h","app_name":"app","msg_id":"ID1",` +
		`"structured_data":{"a@1":{},"b@1":{"m":"1","n":"3"}},"message":"hi \"there\"\n","truncated":true,` +
		`"peer":"1.2.3.4:5","transport":"udp"}`
	if got := string(JSONEncoder{}.Append(nil, e)); got != want {
		t.Fatalf("JSON\n got %s\nwant %s", got, want)
	}
	e2 := &Event{Message: Message{Format: Unparsed, Priority: -1, Message: "x", ParseError: "no PRI"},
		Received: time.Date(2024, 3, 10, 11, 0, 0, 0, time.UTC), Peer: "p", Transport: "tcp"}
	want2 := `{"received":"2024-03-10T11:00:00Z","format":"unparsed","message":"x","parse_error":"no PRI","peer":"p","transport":"tcp"}`
	if got := string(JSONEncoder{}.Append(nil, e2)); got != want2 {
		t.Fatalf("JSON\n got %s\nwant %s", got, want2)
	}
}
