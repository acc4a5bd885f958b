package console

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRecord: any key or value bytes are shown without a panic,
// as valid UTF-8 text, with an encoding named; JSON is shown as JSON,
// bytes that are not UTF-8 as a hex dump. (No registry: Confluent-framed
// bytes are shown as bytes or text; the Avro decoder has its own fuzz
// targets in schemas.)
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":null}]}`))
	f.Add([]byte("plain text é"))
	f.Add([]byte{0, 0, 0, 0, 1, 2, 4, 'x'})
	f.Add([]byte{0xff, 0xfe, 0x80})
	f.Add([]byte(strings.Repeat("é", showBytes/2+3)))
	f.Add([]byte(""))
	c := &Console{}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := c.decode(context.Background(), b)
		if d.Encoding == "" {
			t.Fatalf("no encoding named for %q", b)
		}
		if !utf8.ValidString(d.Text) || !utf8.ValidString(d.Problem) {
			t.Fatalf("%s shown as invalid UTF-8: %q", d.Encoding, d.Text)
		}
		if len(d.Text) > showBytes+100 && d.Encoding != "bytes" {
			t.Fatalf("%s shown as %d bytes, more than %d", d.Encoding, len(d.Text), showBytes)
		}
	})
}

// FuzzTimestampAndDiff: the record browser's timestamp parser and the
// schema diff take any input without a panic; the diff of a to b keeps
// every line of a (as ' ' or '-') and of b (as ' ' or '+') in order.
func FuzzTimestampAndDiff(f *testing.F) {
	f.Add("2026-12-02T13:00", "a\nb\nc", "a\nc\nd")
	f.Add("1733146800000", "", "x")
	f.Add("2026-12-02T13:00:00.5+02:00", "{\n}", "{\n  \"a\": 1\n}")
	f.Fuzz(func(t *testing.T, ts, a, b string) {
		_, _ = parseTimestamp(ts)
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		if len(al) > 200 || len(bl) > 200 {
			return
		}
		var gotA, gotB []string
		for _, l := range diffLines(al, bl) {
			switch l.Op {
			case " ":
				gotA, gotB = append(gotA, l.Text), append(gotB, l.Text)
			case "-":
				gotA = append(gotA, l.Text)
			case "+":
				gotB = append(gotB, l.Text)
			default:
				t.Fatalf("op %q", l.Op)
			}
		}
		if strings.Join(gotA, "\n") != a || strings.Join(gotB, "\n") != b {
			t.Fatalf("diff of %q to %q does not keep both sides: %q / %q", a, b, gotA, gotB)
		}
	})
}
