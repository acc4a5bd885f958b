package event

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/internal/kafkaclient"
	"weir/schemas"
)

// MaxFields bounds the fields of a Schema (the size of Values).
const MaxFields = 16

// Values holds an event's field values in its Schema's order (the
// first len(Schema.Fields) are used). It is an array so that an event
// hands its values over on the stack, without an allocation.
type Values [MaxFields]Value

// Event is what a source's event type E implements (on *E) to be
// encoded by Avro and JSON.
type Event[E any] interface {
	*E
	// EventSchema is the Schema of every event of the type.
	EventSchema() *Schema
	// EventValues are the event's field values in the schema's order.
	EventValues() Values
}

// Encoder turns a source's events into record values.
//
// Contract: Init is called once, with the destination topic, before the
// first Append (to register a schema); Append appends the encoding of e
// to b and returns it. Append only reads the encoder, so it is safe for
// concurrent use after Init.
type Encoder[E any] interface {
	Init(ctx context.Context, topic string) error
	Append(b []byte, e *E) []byte
}

// Avro writes events as Confluent-framed Avro with their Schema's Avro
// schema, registered in a schema registry under "<topic>-value".
type Avro[E any, P Event[E]] struct {
	// Registry is the schema registry client.
	Registry *sr.Client
	id       int32
}

// Init registers the event schema as "<topic>-value" and keeps its id.
func (a *Avro[E, P]) Init(ctx context.Context, topic string) error {
	s := P(nil).EventSchema()
	text := s.AvroSchema()
	if _, err := schemas.Parse(text); err != nil {
		return fmt.Errorf("%s schema: %w", s.Name, err)
	}
	ss, err := a.Registry.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: text, Type: sr.TypeAvro})
	if err != nil {
		return fmt.Errorf("registering the %s schema as %s-value: %w", s.Name, topic, err)
	}
	a.id = int32(ss.ID)
	return nil
}

// ID is the registered schema id (after Init).
func (a *Avro[E, P]) ID() int32 { return a.id }

// Append writes the framed Avro binary of e.
func (a *Avro[E, P]) Append(b []byte, e *E) []byte {
	return AppendAvro[E, P](schemas.AppendHeader(b, a.id), e)
}

// AppendAvro appends the Avro binary of e (no framing) to b.
func AppendAvro[E any, P Event[E]](b []byte, e *E) []byte {
	s := P(e).EventSchema()
	vs := P(e).EventValues()
	return s.AppendAvro(b, vs[:len(s.Fields)])
}

// JSON writes events as JSON objects (Schema.AppendJSON), for topics
// without a schema.
type JSON[E any, P Event[E]] struct{}

// Init does nothing.
func (JSON[E, P]) Init(context.Context, string) error { return nil }

// Append writes e as one JSON object.
func (JSON[E, P]) Append(b []byte, e *E) []byte {
	s := P(e).EventSchema()
	vs := P(e).EventValues()
	return s.AppendJSON(b, vs[:len(s.Fields)])
}

// New returns the encoder a source's "encoding" setting names: "json"
// is JSON; anything else is Avro, registered in the schema registry at
// registryURL with the client settings registryConfig (the source's
// schema_registry_config; kafkaclient.OpenRegistry).
func New[E any, P Event[E]](encoding, registryURL string, registryConfig map[string]string) (Encoder[E], error) {
	if encoding == "json" {
		return JSON[E, P]{}, nil
	}
	cl, err := kafkaclient.OpenRegistry(registryURL, registryConfig)
	if err != nil {
		return nil, err
	}
	return &Avro[E, P]{Registry: cl}, nil
}
