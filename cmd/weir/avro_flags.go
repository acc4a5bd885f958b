package main

import (
	"context"
	"fmt"

	"github.com/linkedin/goavro/v2"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/internal/srclient"
	"weir/schemas"
)

// avroFlags are the Avro options of weir produce and weir consume.
type avroFlags struct {
	valueSchema string // schema file
	subject     string // produce: subject to register under
	decode      bool   // consume: decode with the writer schema
	reg         *registryFlags
}

// addAvroProduceFlags adds --value-schema, --value-subject and --registry.
func addAvroProduceFlags(cmd *cobra.Command) *avroFlags {
	f := &avroFlags{}
	cmd.Flags().StringVar(&f.valueSchema, "value-schema", "", "Avro schema file: each input line is the value as Avro JSON, sent Avro-encoded in the Confluent wire format; the schema is registered under --value-subject")
	cmd.Flags().StringVar(&f.subject, "value-subject", "", "registry subject of --value-schema (default <topic>-value)")
	f.reg = addRegistryFlags(cmd)
	return f
}

// addAvroConsumeFlags adds --value-schema, --decode-avro and --registry.
func addAvroConsumeFlags(cmd *cobra.Command) *avroFlags {
	f := &avroFlags{}
	cmd.Flags().StringVar(&f.valueSchema, "value-schema", "", "Avro reader schema file: decode Confluent-framed Avro values into this schema (resolving each record's writer schema from the registry) and print them as Avro JSON")
	cmd.Flags().BoolVar(&f.decode, "decode-avro", false, "decode Confluent-framed Avro values with their writer schema from the registry and print them as Avro JSON")
	f.reg = addRegistryFlags(cmd)
	return f
}

// valueEncoder returns the function that turns an input line (Avro JSON)
// into a Confluent-framed value, registering the schema first; nil when
// --value-schema is not set.
func (f *avroFlags) valueEncoder(ctx context.Context, topic string) (func(line []byte) ([]byte, error), error) {
	if f.valueSchema == "" {
		return nil, nil
	}
	text, err := readSchemaFile(f.valueSchema)
	if err != nil {
		return nil, fmt.Errorf("--value-schema: %w", err)
	}
	subject := f.subject
	if subject == "" {
		subject = topic + "-value"
	}
	cl, err := f.reg.client()
	if err != nil {
		return nil, err
	}
	rctx, cancel := f.reg.ctx(ctx)
	defer cancel()
	id, err := cl.RegisterSchema(rctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return nil, fmt.Errorf("registering %s under subject %s: %w", f.valueSchema, subject, f.reg.explain(err))
	}
	parsed, _ := schemas.Parse(text)
	enc := schemas.NewEncoder(parsed)
	text2native, err := goavro.NewCodec(text)
	if err != nil {
		return nil, fmt.Errorf("--value-schema %s: %w", f.valueSchema, err)
	}
	return func(line []byte) ([]byte, error) {
		v, rest, err := text2native.NativeFromTextual(line)
		if err != nil {
			return nil, fmt.Errorf("line is not Avro JSON for %s: %w", f.valueSchema, err)
		}
		if len(rest) > 0 && len(trimSpace(rest)) > 0 {
			return nil, fmt.Errorf("trailing data after the Avro JSON value: %.40q", rest)
		}
		return enc.Append(schemas.AppendHeader(nil, int32(id)), v)
	}, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// valueDecoder returns the function that turns a Confluent-framed Avro
// value into Avro JSON (record fields in schema order); nil when neither
// --value-schema nor --decode-avro is set.
func (f *avroFlags) valueDecoder() (func(ctx context.Context, value []byte) ([]byte, error), error) {
	if f.valueSchema == "" && !f.decode {
		return nil, nil
	}
	cl, err := f.reg.client()
	if err != nil {
		return nil, err
	}
	serde := schemas.NewSerde(srclient.Source(cl))
	if f.valueSchema != "" {
		text, err := readSchemaFile(f.valueSchema)
		if err != nil {
			return nil, fmt.Errorf("--value-schema: %w", err)
		}
		reader, _ := schemas.Parse(text)
		return func(ctx context.Context, value []byte) ([]byte, error) {
			v, err := serde.DecodeAs(ctx, value, reader)
			if err != nil {
				return nil, f.reg.explain(err)
			}
			return schemas.AppendJSON(nil, reader, v)
		}, nil
	}
	return func(ctx context.Context, value []byte) ([]byte, error) {
		id, v, err := serde.Decode(ctx, value)
		if err != nil {
			return nil, f.reg.explain(err)
		}
		c, err := serde.Codec(ctx, id) // cached by Decode
		if err != nil {
			return nil, err
		}
		return schemas.AppendJSON(nil, c.Schema, v)
	}, nil
}
