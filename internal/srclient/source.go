package srclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/schemas"
)

// codeSchemaNotFound is the registry's error code for an unknown schema
// id (Confluent's 40403).
const codeSchemaNotFound = 40403

// Source resolves schema ids through a registry client (any
// Confluent-compatible registry), for schemas.NewSerde: an unknown id
// (404) is schemas.ErrUnknownSchema, a schema that is not Avro an error.
func Source(cl *sr.Client) schemas.Source {
	return schemas.SourceFunc(func(ctx context.Context, id int32) (string, error) {
		s, err := cl.SchemaByID(ctx, int(id))
		if err != nil {
			var re *sr.ResponseError
			if errors.As(err, &re) && (re.ErrorCode == codeSchemaNotFound || re.StatusCode == http.StatusNotFound) {
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
