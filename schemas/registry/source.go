package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/schemas"
)

// ClientSource resolves schema ids through a registry client (any
// Confluent-compatible registry), for schemas.NewSerde.
func ClientSource(cl *sr.Client) schemas.Source {
	return schemas.SourceFunc(func(ctx context.Context, id int32) (string, error) {
		s, err := cl.SchemaByID(ctx, int(id))
		if err != nil {
			var re *sr.ResponseError
			if errors.As(err, &re) && re.ErrorCode == CodeSchemaNotFound {
				return "", fmt.Errorf("%w %d: %v", schemas.ErrUnknownSchema, id, err)
			}
			return "", err
		}
		if s.Type != sr.TypeAvro {
			return "", fmt.Errorf("schema id %d is %s, not AVRO", id, s.Type)
		}
		return s.Schema, nil
	})
}
