package streams

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"weir/schemas"
)

// Serde converts values of type T to and from record bytes.
//
// Contract: Decode may keep b only if it copies it (the runtime reuses
// nothing, but tests and callers should not rely on aliasing); Encode
// returns a slice the runtime owns from then on (it may sit in a producer
// buffer until acknowledged). Decode of a nil slice (a null key or value)
// must return T's zero value or an error; Encode of the zero value may
// return nil (a null). Errors from Decode on input topics send the record
// to the dead-letter topic.
type Serde[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(b []byte) (T, error)
}

// SerdeFuncs adapts two functions to a Serde.
type SerdeFuncs[T any] struct {
	Enc func(T) ([]byte, error)
	Dec func([]byte) (T, error)
}

// Encode implements Serde.
func (f SerdeFuncs[T]) Encode(v T) ([]byte, error) { return f.Enc(v) }

// Decode implements Serde.
func (f SerdeFuncs[T]) Decode(b []byte) (T, error) { return f.Dec(b) }

type bytesSerde struct{}

func (bytesSerde) Encode(v []byte) ([]byte, error) { return v, nil }
func (bytesSerde) Decode(b []byte) ([]byte, error) { return b, nil }

// Bytes passes record bytes through unchanged.
func Bytes() Serde[[]byte] { return bytesSerde{} }

type stringSerde struct{}

func (stringSerde) Encode(v string) ([]byte, error) { return []byte(v), nil }
func (stringSerde) Decode(b []byte) (string, error) { return string(b), nil }

// String is UTF-8 text (not validated), as Kafka's StringSerde.
func String() Serde[string] { return stringSerde{} }

type int64Serde struct{}

func (int64Serde) Encode(v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)), nil
}
func (int64Serde) Decode(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: int64 wants 8 bytes, got %d", ErrDecode, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// Int64 is an 8-byte big-endian integer, as Kafka's LongSerde (so counts
// written by weir read as Longs from Java).
func Int64() Serde[int64] { return int64Serde{} }

type jsonSerde[T any] struct{}

func (jsonSerde[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }
func (jsonSerde[T]) Decode(b []byte) (T, error) {
	var v T
	if b == nil {
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("%w: json: %v", ErrDecode, err)
	}
	return v, nil
}

// JSON encodes T with encoding/json: the format of topics declared without
// a schema.
func JSON[T any]() Serde[T] { return jsonSerde[T]{} }

// avroSerde is Confluent-framed Avro through weir's schemas.Serde.
type avroSerde struct {
	s      *schemas.Serde
	id     int32
	reader *schemas.Schema
}

// Avro reads and writes Confluent-framed Avro (magic 0, schema id, Avro
// binary) through s, whose Source is usually the schema registry
// (srclient.Source). Values are in goavro's native form
// (map[string]any for records). Decoding resolves each record's writer
// schema to reader when reader is non-nil, else decodes with the writer
// schema. Encoding writes with the registered schema writerID (0 makes the
// serde decode-only: Encode fails).
func Avro(s *schemas.Serde, writerID int32, reader *schemas.Schema) Serde[any] {
	return avroSerde{s: s, id: writerID, reader: reader}
}

func (a avroSerde) Encode(v any) ([]byte, error) {
	if a.id == 0 {
		return nil, fmt.Errorf("%w: avro serde has no writer schema id", ErrEncode)
	}
	b, err := a.s.Encode(context.Background(), a.id, v)
	if err != nil {
		return nil, fmt.Errorf("%w: avro (schema id %d): %v", ErrEncode, a.id, err)
	}
	return b, nil
}

func (a avroSerde) Decode(b []byte) (any, error) {
	var (
		v   any
		err error
	)
	if a.reader != nil {
		v, err = a.s.DecodeAs(context.Background(), b, a.reader)
	} else {
		_, v, err = a.s.Decode(context.Background(), b)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: avro: %v", ErrDecode, err)
	}
	return v, nil
}
