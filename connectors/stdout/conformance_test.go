package stdout

import (
	"bytes"
	"sync"
	"testing"

	"weir/connectors/conformance"
)

type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

func TestConformance(t *testing.T) {
	out := &buffer{}
	Output = out
	conformance.TestSink(t, conformance.SinkDef{
		Kind: "stdout",
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SinkCase {
			return &conformance.SinkCase{
				Config:    map[string]any{"format": "json"},
				Delivered: func() ([]int, error) { return conformance.IDsOfLines(out.bytes()), nil },
				Bad:       []byte{0, 0, 0, 0, 42, 2}, // Avro-framed, no registry to decode it
			}
		},
	})
}
