package event

import (
	"encoding/binary"
	"testing"
	"time"
)

type testEvent struct {
	at   time.Time
	name string
	body []byte
	n    int64
	ok   bool
}

var testSchema = Schema{Name: "T", Namespace: "weir.test", Fields: []Field{
	{Name: "at", Kind: TimestampMillis},
	{Name: "name", Kind: String, Nullable: true},
	{Name: "body", Kind: String},
	{Name: "n", Kind: Long},
	{Name: "ok", Kind: Boolean, Default: "false"},
}}

func (*testEvent) EventSchema() *Schema { return &testSchema }

func (e *testEvent) EventValues() Values {
	return Values{{T: e.at}, {Null: e.name == "", S: e.name}, {B: e.body}, {I: e.n}, {Bool: e.ok}}
}

// The encoders hand the values over on the stack: appending to a buffer
// with room allocates nothing.
func TestEncodersDoNotAllocate(t *testing.T) {
	e := &testEvent{at: time.UnixMilli(1700000000123), name: "n", body: []byte("héllo\n"), n: -7, ok: true}
	buf := make([]byte, 0, 256)
	var a Avro[testEvent, *testEvent]
	var j JSON[testEvent, *testEvent]
	if n := testing.AllocsPerRun(100, func() { buf = a.Append(buf[:0], e) }); n != 0 {
		t.Errorf("Avro.Append: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf = j.Append(buf[:0], e) }); n != 0 {
		t.Errorf("JSON.Append: %v allocations, want 0", n)
	}
	if got, want := string(j.Append(nil, e)), `{"at":1700000000123,"name":"n","body":"héllo\n","n":-7,"ok":true}`; got != want {
		t.Errorf("JSON: got %s, want %s", got, want)
	}
	got := a.Append(nil, e)
	want := []byte{0, 0, 0, 0, 0} // magic byte, schema id 0 before Init
	want = binary.AppendVarint(want, 1700000000123)
	want = append(want, 2, 2, 'n', 14)
	want = append(want, "héllo\n"...)
	want = append(want, 13, 1)
	if string(got) != string(want) {
		t.Errorf("Avro: got % x, want % x", got, want)
	}
}
