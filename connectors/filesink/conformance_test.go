package filesink_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"weir/connectors/conformance"
)

func TestConformance(t *testing.T) {
	conformance.TestSink(t, conformance.SinkDef{
		Kind: "file-sink", // filesink.KindName
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SinkCase {
			path := filepath.Join(t.TempDir(), "out", name+".jsonl")
			return &conformance.SinkCase{
				Config: map[string]any{"path": path, "format": "json"},
				Delivered: func() ([]int, error) {
					b, err := os.ReadFile(path)
					if errors.Is(err, os.ErrNotExist) {
						return nil, nil
					}
					return conformance.IDsOfLines(b), err
				},
				Bad: []byte{0, 0, 0, 0, 42, 2}, // Avro-framed, no registry to decode it
			}
		},
		BadConfigs: []conformance.BadConfig{{
			Name: "path not writable", Setting: "path",
			Change: func(c map[string]any) { c["path"] = "/proc/weir-conformance/out.jsonl" },
		}},
	})
}
