package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/connectors/conformance"
)

// The file kind: each id is a line "id=N" appended to a log file; the
// large input is one long line.
func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.TestSource(t, conformance.SourceDef{
		Kind: "file",
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SourceCase {
			dir := t.TempDir()
			path := filepath.Join(dir, "app.log")
			appendLine := func(line string) {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.WriteString(line + "\n"); err != nil {
					t.Fatal(err)
				}
			}
			return &conformance.SourceCase{
				Config: map[string]any{"topic": name, "include": []any{filepath.Join(dir, "*.log")}, "encoding": "json",
					"rescan_interval": "50ms", "poll_interval": "10ms", "host": "testhost"},
				Topic: name,
				Write: func(ids ...int) {
					var b strings.Builder
					for i, id := range ids {
						if i > 0 {
							b.WriteString("\n")
						}
						fmt.Fprintf(&b, "id=%d", id)
					}
					appendLine(b.String())
				},
				WriteLarge: func(id, size int) { appendLine(fmt.Sprintf("id=%d %s", id, strings.Repeat("x", size))) },
				ID:         conformance.MessageID,
			}
		},
		BadConfigs: []conformance.BadConfig{
			{Name: "avro without a registry", Setting: "schema_registry", Change: func(c map[string]any) { c["encoding"] = "avro" }},
			{Name: "bad glob", Setting: "include", Change: func(c map[string]any) { c["include"] = []any{"/tmp/[x"} }},
			{Name: "bad multiline pattern", Setting: "multiline_pattern", Change: func(c map[string]any) { c["multiline_pattern"] = "(" }},
		},
	})
}
