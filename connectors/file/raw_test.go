package file

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"weir/connectors"
	"weir/internal/testkit"
)

type rawTestCtx struct{ m *connectors.Metrics }

func (c rawTestCtx) Name() string                 { return "raw" }
func (c rawTestCtx) Logger() *zap.Logger          { return zap.NewNop() }
func (c rawTestCtx) Metrics() *connectors.Metrics { return c.m }

// pollN polls src until it returned n records (or fails the test).
func pollN(t *testing.T, src *Source, n int) []connectors.SourceRecord {
	t.Helper()
	var out []connectors.SourceRecord
	testkit.CheckFor(t, 10*time.Second, func() error {
		var err error
		if out, err = src.Poll(context.Background(), out); err != nil {
			return testkit.Stop(err)
		}
		if len(out) < n {
			return fmt.Errorf("%d records, want %d", len(out), n)
		}
		return nil
	})
	if len(out) != n {
		t.Fatalf("%d records, want %d", len(out), n)
	}
	return out
}

// jsonFields decodes a JSON event into its fields in order (numbers as
// int64, the fields map as map[string]string).
func jsonFields(t *testing.T, v []byte) []connectors.RawField {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.Token() // {
	var out []connectors.RawField
	for dec.More() {
		k, _ := dec.Token()
		name := k.(string)
		var val any
		switch name {
		case "timestamp", "offset":
			var n int64
			json.Unmarshal(m[name], &n)
			val = n
		case "fields":
			var f map[string]string
			json.Unmarshal(m[name], &f)
			val = f
		case "truncated":
			var b bool
			json.Unmarshal(m[name], &b)
			val = b
		default:
			var s string
			json.Unmarshal(m[name], &s)
			val = s
		}
		var skip json.RawMessage
		dec.Decode(&skip)
		out = append(out, connectors.RawField{Name: name, Value: val})
	}
	return out
}

// TestEmitRaw checks that raw records carry the line and exactly the
// fields (names, order, values) of the JSON encoding of the same lines.
func TestEmitRaw(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	lines := []string{
		`plain line`,
		`{"level":"info","msg":"quoted \"x\" and \\ backslash"}`,
		"invalid \xff\xfe utf-8",
		strings.Repeat("long ", 40), // cut at max_line_bytes
		"tab\there",
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(raw bool, fields map[string]string) *Source {
		src, err := New(Options{Topic: "t", Include: []string{path}, Encoder: JSONEncoder{}, Host: "h1",
			MaxLineBytes: 64, Fields: fields, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if raw {
			src.EmitRaw()
		}
		if err := src.Open(context.Background(), rawTestCtx{connectors.NewTestMetrics("raw")}, nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		return src
	}
	for _, fields := range []map[string]string{nil, {"env": "prod", "dc": "a"}} {
		js := pollN(t, open(false, fields), len(lines))
		rs := pollN(t, open(true, fields), len(lines))
		for i := range js {
			want := jsonFields(t, js[i].Value)
			got := rs[i].Fields
			if len(got) != len(want) {
				t.Fatalf("record %d: fields %v, want %v", i, got, want)
			}
			for j := range want {
				g, w := got[j], want[j]
				if g.Name != w.Name {
					t.Fatalf("record %d field %d: %q, want %q", i, j, g.Name, w.Name)
				}
				switch w.Name {
				case "timestamp":
					if d := g.Value.(int64) - w.Value.(int64); d < -5000 || d > 5000 {
						t.Fatalf("record %d: timestamp %v, want about %v", i, g.Value, w.Value)
					}
				case "message":
					b, ok := g.Value.([]byte)
					if !ok || string(b) != w.Value.(string) || !bytes.Equal(b, rs[i].Value) {
						t.Fatalf("record %d: message %q (value %q), want %q", i, g.Value, rs[i].Value, w.Value)
					}
				case "fields":
					gm, wm := g.Value.(map[string]string), w.Value.(map[string]string)
					if len(gm) != len(wm) || gm["env"] != wm["env"] || gm["dc"] != wm["dc"] {
						t.Fatalf("record %d: fields %v, want %v", i, gm, wm)
					}
				default:
					if g.Value != w.Value {
						t.Fatalf("record %d: %s = %#v, want %#v", i, w.Name, g.Value, w.Value)
					}
				}
			}
			if rs[i].SourcePartition != js[i].SourcePartition || !bytes.Equal(rs[i].Position, js[i].Position) {
				t.Fatalf("record %d: position %s %x, want %s %x", i, rs[i].SourcePartition, rs[i].Position, js[i].SourcePartition, js[i].Position)
			}
		}
		truncated := false
		for _, f := range rs[3].Fields {
			truncated = truncated || (f.Name == "truncated" && f.Value == true)
		}
		if !truncated {
			t.Fatalf("record 3 is not marked truncated: %v", rs[3].Fields)
		}
	}
}
