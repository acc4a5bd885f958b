package registry

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is a Confluent Schema Registry error: an HTTP status, an error
// code and a message, sent as {"error_code": Code, "message": Message}.
type Error struct {
	Status  int    `json:"-"`
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// Confluent's error codes.
const (
	CodeSubjectNotFound       = 40401
	CodeVersionNotFound       = 40402
	CodeSchemaNotFound        = 40403
	CodeSubjectSoftDeleted    = 40404
	CodeSubjectNotSoftDeleted = 40405
	CodeVersionSoftDeleted    = 40406
	CodeVersionNotSoftDeleted = 40407
	CodeSubjectCompatNotSet   = 40408
	CodeSubjectModeNotSet     = 40409
	CodeIncompatibleSchema    = 409
	CodeInvalidSchema         = 42201
	CodeInvalidVersion        = 42202
	CodeInvalidCompatibility  = 42203
	CodeInvalidMode           = 42204
	CodeOperationNotPermitted = 42205
	CodeIDDoesNotMatch        = 42207
	CodeInvalidSubject        = 42208
	CodeSchemaTooLarge        = 42209
	CodeStoreError            = 50001
	CodeOperationTimeout      = 50002
	CodeBadRequest            = 400
	CodeNotFound              = 404
	CodeMethodNotAllowed      = 405
	CodeUnsupportedMediaType  = 415
	CodeInternal              = 500
)

func errf(status, code int, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func errSubjectNotFound(s string) *Error {
	return errf(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", s)
}

func errVersionNotFound(v int) *Error {
	return errf(http.StatusNotFound, CodeVersionNotFound, "Version %d not found.", v)
}

func errSchemaIDNotFound(id int32) *Error {
	return errf(http.StatusNotFound, CodeSchemaNotFound, "Schema %d not found", id)
}

func errSchemaNotFound() *Error {
	return errf(http.StatusNotFound, CodeSchemaNotFound, "Schema not found")
}

func errInvalidSchema(err error) *Error {
	return errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: %v", err)
}

func errInvalidVersion(v string) *Error {
	return errf(http.StatusUnprocessableEntity, CodeInvalidVersion,
		"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", v)
}

func errInvalidCompatibility(l string) *Error {
	return errf(http.StatusUnprocessableEntity, CodeInvalidCompatibility,
		"Invalid compatibility level %q. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive", l)
}

func errInvalidMode(m string) *Error {
	return errf(http.StatusUnprocessableEntity, CodeInvalidMode,
		"Invalid mode %q. Valid values are READWRITE, READONLY, IMPORT", m)
}

func errNotPermitted(format string, args ...any) *Error {
	return errf(http.StatusUnprocessableEntity, CodeOperationNotPermitted, format, args...)
}

func errStore(err error) *Error {
	return errf(http.StatusInternalServerError, CodeStoreError, "Error in the _schemas store: %v", err)
}

// asError converts any error to an *Error (a store error unless it is one).
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return errStore(err)
}
