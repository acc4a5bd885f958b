package connectors

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testSpec = Spec{Fields: []Field{
	{Name: "path", Type: String, Required: true, Doc: "file path"},
	{Name: "mode", Type: String, Default: "end", Enum: []string{"beginning", "end"}},
	{Name: "interval", Type: Duration, Default: "5s"},
	{Name: "max", Type: Size, Default: "64KiB"},
	{Name: "n", Type: Int, Default: 3},
	{Name: "on", Type: Bool},
	{Name: "globs", Type: StringList},
	{Name: "labels", Type: StringMap},
}}

func TestSpecDecode(t *testing.T) {
	t.Parallel()
	cfg, err := testSpec.Decode(map[string]any{"path": "/x", "interval": 250.0, "globs": []any{"a", "b"},
		"labels": map[string]any{"k": "v"}, "max": 1024, "on": true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.String("path") != "/x" || cfg.String("mode") != "end" || cfg.Duration("interval") != 250*time.Millisecond ||
		cfg.Int("max") != 1024 || cfg.Int("n") != 3 || !cfg.Bool("on") || strings.Join(cfg.Strings("globs"), ",") != "a,b" ||
		cfg.StringMap("labels")["k"] != "v" {
		t.Fatalf("decoded %#v", cfg)
	}
	cfg, err = testSpec.Decode(map[string]any{"path": "/x", "interval": "1m", "max": "10MiB"})
	if err != nil || cfg.Duration("interval") != time.Minute || cfg.Int("max") != 10<<20 || cfg.Has("on") {
		t.Fatalf("decoded %#v, %v", cfg, err)
	}
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{}, `"path" (string) is required`},
		{map[string]any{"path": "/x", "bogus": 1}, "unknown setting bogus"},
		{map[string]any{"path": 3}, `setting "path": want a string`},
		{map[string]any{"path": "/x", "mode": "middle"}, `"middle" is not one of beginning, end`},
		{map[string]any{"path": "/x", "interval": "soon"}, `setting "interval"`},
		{map[string]any{"path": "/x", "max": "lots"}, `setting "max"`},
		{map[string]any{"path": "/x", "n": 1.5}, "not a whole number"},
		{map[string]any{"path": "/x", "globs": []any{1}}, "element 0"},
	} {
		_, err := testSpec.Decode(tc.raw)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%v) = %v, want ErrConfig containing %q", tc.raw, err, tc.want)
		}
	}
}

func TestSpecValidateAndRegistry(t *testing.T) {
	t.Parallel()
	s := testSpec
	s.Validate = func(c Config) error {
		if c.Int("n") > 10 {
			return errors.New(`"n" must be at most 10`)
		}
		return nil
	}
	if _, err := s.Decode(map[string]any{"path": "/x", "n": 11}); !errors.Is(err, ErrConfig) {
		t.Fatalf("cross-field validation not applied: %v", err)
	}
	r := &Registry{}
	r.Register(&Kind{Name: "mem", Spec: s, NewSource: func(string, Config) (Source, error) { return nil, nil }})
	if k, err := r.Lookup("mem"); err != nil || !k.IsSource() {
		t.Fatal(k, err)
	}
	if _, err := r.Lookup("nope"); !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "known: mem") {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("duplicate kind accepted")
			}
		}()
		r.Register(&Kind{Name: "mem", NewSink: func(string, Config) (Sink, error) { return nil, nil }})
	}()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("bad default accepted")
			}
		}()
		r.Register(&Kind{Name: "bad", Spec: Spec{Fields: []Field{{Name: "d", Type: Duration, Default: "x"}}},
			NewSink: func(string, Config) (Sink, error) { return nil, nil }})
	}()
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"1": 1, "64KiB": 64 << 10, "10 MiB": 10 << 20, "1GB": 1e9, "1.5k": 1536} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "5 parsecs"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	b := Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond, Factor: 2}
	for n, want := range []time.Duration{10, 20, 40, 80, 80, 80} {
		want *= time.Millisecond
		for i := 0; i < 50; i++ {
			if d := b.Delay(n); d < want/2 || d > want {
				t.Fatalf("Delay(%d) = %v, want in [%v, %v]", n, d, want/2, want)
			}
		}
	}
}

func TestSourceHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	b := appendSourceHeader(nil, "conn", "fp:abc", 12345, []byte{1, 2, 3})
	c, sp, seq, pos, err := parseSourceHeader(b)
	if err != nil || c != "conn" || sp != "fp:abc" || seq != 12345 || string(pos) != "\x01\x02\x03" {
		t.Fatal(c, sp, seq, pos, err)
	}
	for i := 0; i < len(b)-4; i++ {
		if _, _, _, _, err := parseSourceHeader(b[:i]); err == nil && i < 12 {
			t.Errorf("truncated header of %d bytes parsed", i)
		}
	}
}
