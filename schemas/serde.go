package schemas

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrUnknownSchema is wrapped when a schema id cannot be resolved.
var ErrUnknownSchema = errors.New("unknown schema id")

// Source resolves schema ids to schema texts: a schema registry client.
//
// Contract: SchemaByID returns the text registered under id, or an error
// (wrapping ErrUnknownSchema when the registry says the id does not
// exist). It may be called concurrently. Serde caches what it returns
// forever: ids are immutable in a schema registry.
type Source interface {
	SchemaByID(ctx context.Context, id int32) (string, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, id int32) (string, error)

// SchemaByID calls f.
func (f SourceFunc) SchemaByID(ctx context.Context, id int32) (string, error) { return f(ctx, id) }

// Codec is the compiled encoder and decoder of one registered schema.
type Codec struct {
	ID      int32
	Schema  *Schema
	Encoder *Encoder
	Decoder *Decoder // writer = reader = Schema
}

type planKey struct {
	id     int32
	reader *Schema
}

// Serde encodes and decodes Confluent-framed Avro with an id → codec cache
// and a (writer id, reader schema) → resolution plan cache. Lookups of
// cached entries take no lock (copy-on-write maps behind atomic
// pointers); misses ask the Source once per id. Safe for concurrent use.
type Serde struct {
	src Source

	codecs atomic.Pointer[map[int32]*Codec]
	plans  atomic.Pointer[map[planKey]*Decoder]
	mu     sync.Mutex // serializes cache writers
}

// NewSerde returns a Serde resolving unknown ids through src (nil: only
// ids added with Add are known).
func NewSerde(src Source) *Serde {
	s := &Serde{src: src}
	codecs := map[int32]*Codec{}
	plans := map[planKey]*Decoder{}
	s.codecs.Store(&codecs)
	s.plans.Store(&plans)
	return s
}

// Add compiles schema under id into the cache (for producers that just
// registered it, and for tests) and returns its codec.
func (s *Serde) Add(id int32, schema *Schema) *Codec {
	dec, err := NewDecoder(schema, schema)
	if err != nil { // a schema always resolves against itself
		panic(fmt.Sprintf("schemas: schema %d does not resolve against itself: %v", id, err))
	}
	c := &Codec{ID: id, Schema: schema, Encoder: NewEncoder(schema), Decoder: dec}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := (*s.codecs.Load())[id]; ok {
		return old
	}
	next := cloneMap(*s.codecs.Load())
	next[id] = c
	s.codecs.Store(&next)
	return c
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Codec returns the codec of id, asking the Source on a miss.
func (s *Serde) Codec(ctx context.Context, id int32) (*Codec, error) {
	if c, ok := (*s.codecs.Load())[id]; ok {
		return c, nil
	}
	if s.src == nil {
		return nil, fmt.Errorf("%w %d (no schema registry configured)", ErrUnknownSchema, id)
	}
	text, err := s.src.SchemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	schema, err := Parse(text)
	if err != nil {
		return nil, fmt.Errorf("schema id %d from the registry: %w", id, err)
	}
	return s.Add(id, schema), nil
}

// AppendEncode appends the Confluent framing of id and the Avro binary of
// v to b.
func (s *Serde) AppendEncode(ctx context.Context, b []byte, id int32, v any) ([]byte, error) {
	c, err := s.Codec(ctx, id)
	if err != nil {
		return b, err
	}
	out, err := c.Encoder.Append(AppendHeader(b, id), v)
	if err != nil {
		return b, fmt.Errorf("encoding with schema id %d: %w", id, err)
	}
	return out, nil
}

// Encode returns the Confluent-framed Avro binary of v under schema id.
func (s *Serde) Encode(ctx context.Context, id int32, v any) ([]byte, error) {
	return s.AppendEncode(ctx, nil, id, v)
}

// Decode decodes a Confluent-framed datum with its writer schema and
// returns the schema id and the native value.
func (s *Serde) Decode(ctx context.Context, b []byte) (int32, any, error) {
	id, payload, err := ParseHeader(b)
	if err != nil {
		return 0, nil, err
	}
	c, err := s.Codec(ctx, id)
	if err != nil {
		return id, nil, err
	}
	v, err := c.Decoder.Decode(payload)
	if err != nil {
		return id, nil, fmt.Errorf("decoding with schema id %d: %w", id, err)
	}
	return id, v, nil
}

// DecodeAs decodes a Confluent-framed datum into reader's native form,
// resolving the writer schema (found by the datum's id) against reader
// per the Avro spec. The plan is compiled once per (id, reader) pair.
func (s *Serde) DecodeAs(ctx context.Context, b []byte, reader *Schema) (any, error) {
	id, payload, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	d, err := s.Plan(ctx, id, reader)
	if err != nil {
		return nil, err
	}
	v, err := d.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("decoding schema id %d as %s: %w", id, reader.Root.TypeName(), err)
	}
	return v, nil
}

// Plan returns the cached resolution plan from writer id to reader.
func (s *Serde) Plan(ctx context.Context, id int32, reader *Schema) (*Decoder, error) {
	key := planKey{id, reader}
	if d, ok := (*s.plans.Load())[key]; ok {
		return d, nil
	}
	c, err := s.Codec(ctx, id)
	if err != nil {
		return nil, err
	}
	var d *Decoder
	if c.Schema == reader || c.Schema.Identity() == reader.Identity() {
		d = c.Decoder
	} else if d, err = NewDecoder(c.Schema, reader); err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := cloneMap(*s.plans.Load())
	next[key] = d
	s.plans.Store(&next)
	return d, nil
}
