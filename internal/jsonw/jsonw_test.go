package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// stdlib is encoding/json's quoting of s with HTML escaping off.
func stdlib(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// check holds AppendString to encoding/json: the same bytes for valid
// UTF-8, the same decoded string otherwise; string and []byte agree.
func check(t testing.TB, s string) {
	got := AppendString([]byte("x"), s)
	if got[0] != 'x' {
		t.Fatalf("AppendString(%q) dropped the buffer's contents", s)
	}
	got = got[1:]
	if gotB := AppendString(nil, []byte(s)); !bytes.Equal(gotB, got) {
		t.Fatalf("AppendString(%q): string gives %s, []byte gives %s", s, got, gotB)
	}
	want := stdlib(t, s)
	if utf8.ValidString(s) {
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
		return
	}
	var back, wantBack string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("AppendString(%q) = %s, not JSON: %v", s, got, err)
	}
	if err := json.Unmarshal(want, &wantBack); err != nil {
		t.Fatal(err)
	}
	if back != wantBack || back != strings.ToValidUTF8(back, "?") {
		t.Fatalf("AppendString(%q) = %s decodes to %q, encoding/json's %s to %q", s, got, back, want, wantBack)
	}
}

var cases = []string{
	"",
	"plain ascii",
	`quote " backslash \ slash /`,
	"\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f",
	"<html> & </html>",
	"ü ß 日本語 😀",
	"line\u2028sep\u2029para",
	"bad \xff byte",
	"\xe2\x80",         // truncated U+2028
	"\xed\xa0\x80",     // surrogate half
	"\xf4\x90\x80\x80", // above U+10FFFF
	"end\xc3",
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range cases {
		check(t, s)
	}
	for c := 0; c < 256; c++ {
		check(t, string([]byte{byte(c)}))
		check(t, "a"+string([]byte{byte(c)})+"b")
	}
}

func TestInvalidBytesBecomeReplacementCharacters(t *testing.T) {
	got := string(AppendString(nil, "a\xff\xfeb"))
	if want := "\"a\ufffd\ufffdb\""; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

func BenchmarkAppendString(b *testing.B) {
	benchAppend(b, "GET /api/cart/42?x=1&y=2 200 served from cache \"hit\"\tin 12ms — ok")
}

// benchAppend measures AppendString of msg as a string and as a []byte.
func benchAppend(b *testing.B, msg string) {
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(msg)))
	b.Run("string", func(b *testing.B) {
		for b.Loop() {
			buf = AppendString(buf[:0], msg)
		}
	})
	bs := []byte(msg)
	b.Run("bytes", func(b *testing.B) {
		for b.Loop() {
			buf = AppendString(buf[:0], bs)
		}
	})
}

// TestAppendNoAllocs: with room in b, neither form allocates, non-ASCII
// runes, invalid bytes and U+2028 included.
func TestAppendNoAllocs(t *testing.T) {
	msg := "héllo — wörld \u2028 \xff 日本語 \"q\"\n"
	bs := []byte(msg)
	buf := make([]byte, 0, 256)
	for name, f := range map[string]func(){
		"string": func() { buf = AppendString(buf[:0], msg) },
		"bytes":  func() { buf = AppendString(buf[:0], bs) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}

// TestDecodeRuneMatchesUTF8: every one- to four-byte prefix shape that
// matters decodes as utf8.DecodeRune decodes it.
func TestDecodeRuneMatchesUTF8(t *testing.T) {
	conts := []byte{0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff}
	for c0 := 0x80; c0 < 0x100; c0++ {
		for _, c1 := range conts {
			for _, c2 := range conts {
				for _, c3 := range conts {
					full := []byte{byte(c0), c1, c2, c3}
					for n := 1; n <= 4; n++ {
						p := full[:n]
						wr, wn := utf8.DecodeRune(p)
						if r, k := decodeRune(p); r != wr || k != wn {
							t.Fatalf("% x: got %U %d, want %U %d", p, r, k, wr, wn)
						}
						if r, k := decodeRune(string(p)); r != wr || k != wn {
							t.Fatalf("string % x: got %U %d, want %U %d", p, r, k, wr, wn)
						}
					}
				}
			}
		}
	}
}

// BenchmarkAppendStringNonASCII: text where most runes are not ASCII
// (each one decoded).
func BenchmarkAppendStringNonASCII(b *testing.B) {
	benchAppend(b, "Grüße aus München — 日本語のテキスト — ещё немного текста ñ ü ö")
}
