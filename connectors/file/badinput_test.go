package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/schemas"
)

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	appendLines(t, e.path("good.log"), "g", 0, 500)
	garbage := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	os.WriteFile(e.path("garbage.log"), garbage, 0o644)
	huge := append(bytes.Repeat([]byte("x"), 10<<20), "\nafter the huge line\n"...)
	os.WriteFile(e.path("huge.log"), huge, 0o644)
	os.Symlink(e.path("loop1.log"), e.path("loop2.log"))
	os.Symlink(e.path("loop2.log"), e.path("loop1.log"))
	os.Symlink(e.path("nowhere"), e.path("dangling.log"))
	os.Mkdir(e.path("dir.log"), 0o755)
	appendLines(t, e.path("deleted.log"), "d", 0, 20000)
	o := e.options("bad", e.path("*.log"))
	o.MaxLineBytes = 1 << 10
	e.run("bad", o)
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if n := counter(e.ms.For("bad").EventCounter("file_opened")); n < 4 {
			return fmt.Errorf("%v files opened", n)
		}
		return nil
	})
	// Delete a file while it is being read: what was read is kept, no crash.
	os.Remove(e.path("deleted.log"))
	appendLines(t, e.path("good.log"), "g", 500, 1000)
	evs := e.waitFor("bad", func(evs []event) bool {
		m := messages(evs)
		return m["g line 000999 with some padding to look like a log line"] > 0 && m["d line 019999 with some padding to look like a log line"] > 0 &&
			m["after the huge line"] > 0
	})
	checkLines(t, evs, "g", 0, 1000)
	var sawHuge, sawAfter bool
	for _, ev := range evs {
		if strings.HasSuffix(ev.File, "huge.log") {
			if ev.Truncated && len(ev.Message) == 1<<10 && ev.Offset == 0 {
				sawHuge = true
			}
			if ev.Message == "after the huge line" && !ev.Truncated && ev.Offset == 10<<20+1 {
				sawAfter = true
			}
		}
		if len(ev.Message) > 1<<10 {
			t.Fatalf("event of %d bytes from %s", len(ev.Message), ev.File)
		}
	}
	if !sawHuge || !sawAfter {
		t.Fatalf("huge line: truncated head seen %v, next line seen %v", sawHuge, sawAfter)
	}
	// Deleted file: it was open, so it is read to its end.
	checkLines(t, evs, "d", 0, 20000)
	m := e.ms.For("bad")
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"symlink_loop errors", counter(m.ErrorCounter("symlink_loop"))},
		{"stat errors (dangling)", counter(m.ErrorCounter("stat"))},
		{"line_truncated events", counter(m.EventCounter("line_truncated"))},
		{"invalid_utf8 events", counter(m.EventCounter("invalid_utf8"))},
	} {
		if c.v < 1 {
			t.Errorf("%s = %v, want ≥ 1", c.name, c.v)
		}
	}
}

func TestMultilineAndStartAtEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	os.WriteFile(e.path("old.log"), []byte("old line 1\nold line 2\n"), 0o644)
	o := e.options("ml", e.path("*.log"))
	o.StartAtEnd = true
	o.MultilinePattern = regexp.MustCompile(`^\d{4}-`)
	o.MultilineFlushTimeout = 200 * time.Millisecond
	o.Fields = map[string]string{"service": "checkout"}
	e.run("ml", o)
	m := e.ms.For("ml")
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if counter(m.EventCounter("file_opened")) < 1 {
			return errors.New("file not opened yet")
		}
		return nil
	})
	f, _ := os.OpenFile(e.path("old.log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("2026-01-01 ERROR boom\n  at a.b(c.java:1)\n  at d.e(f.java:2)\n2026-01-01 INFO ok\n")
	f.Close()
	evs := e.waitMessages("ml", 2)
	if len(evs) != 2 || evs[0].Message != "2026-01-01 ERROR boom\n  at a.b(c.java:1)\n  at d.e(f.java:2)" ||
		evs[1].Message != "2026-01-01 INFO ok" || evs[0].Fields["service"] != "checkout" || evs[0].Offset != 22 {
		t.Fatalf("events %q", fmt.Sprintf("%+v", evs))
	}
}

// The hand-unrolled Avro encoder writes what schemas.Encoder writes.
func TestAvroEncoderMatchesSchemas(t *testing.T) {
	t.Parallel()
	s, err := schemas.Parse(EventSchema)
	if err != nil {
		t.Fatal(err)
	}
	enc := schemas.NewEncoder(s)
	for _, ev := range []Event{
		{Time: time.UnixMilli(1700000000123), Host: "h", File: "/var/log/a.log", Offset: 12345, Message: []byte("hello")},
		{Time: time.UnixMilli(-5), Host: "", File: "", Offset: 0, Message: nil, Truncated: true, Fields: map[string]string{}},
		{Time: time.UnixMilli(1), Host: "héllo", File: "f", Offset: 1 << 40, Message: []byte("x\ny"), Fields: map[string]string{"b": "2", "a": "1"}},
	} {
		native := map[string]any{"timestamp": ev.Time.UnixMilli(), "host": ev.Host, "file": ev.File, "offset": ev.Offset,
			"message": string(ev.Message), "truncated": ev.Truncated, "fields": nil}
		if ev.Fields != nil {
			native["fields"] = map[string]any{"map": ev.Fields}
		}
		want, err := enc.Append(nil, native)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEventAvro(nil, &ev); !bytes.Equal(got, want) {
			// Maps may be written in any key order; compare decoded.
			dec, _ := schemas.NewDecoder(s, s)
			gv, gerr := dec.Decode(got)
			wv, _ := dec.Decode(want)
			if gerr != nil || !equalish(gv, wv) {
				t.Fatalf("event %+v:\n got %x (%v)\nwant %x", ev, got, gerr, want)
			}
		}
	}
	_ = context.Background
}

func equalish(a, b any) bool { return fmtAny(a) == fmtAny(b) }
