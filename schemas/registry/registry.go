package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"weir/schemas"
)

// The modes, as Confluent names them.
const (
	ModeReadWrite = "READWRITE"
	ModeReadOnly  = "READONLY"
	ModeImport    = "IMPORT"
)

// Config configures a Registry.
type Config struct {
	// Log is where records are stored and read back; required.
	Log Log
	// Logger receives the registry's logs (nil: none).
	Logger *zap.Logger
	// WriteTimeout bounds one write and the wait to read it back
	// (default 30 s).
	WriteTimeout time.Duration
	// MaxBodyBytes limits request bodies (default 16 MiB).
	MaxBodyBytes int64
}

// Registry is a Confluent-compatible schema registry over a Log. Every
// instance consumes the whole log into memory; writes are serialized in
// this instance, appended, and answered only after this instance has read
// them back (read-your-writes). Run one writing instance per log: ids are
// allocated as max id + 1 by whoever writes.
type Registry struct {
	cfg Config
	log *zap.Logger

	mu      sync.RWMutex // guards st and applied
	st      *state
	applied int64
	cond    *sync.Cond // signalled (with mu held) when applied grows

	writeMu sync.Mutex // one write at a time

	cancel   context.CancelFunc
	done     chan struct{}
	consumeE error
}

// New starts consuming cfg.Log and waits until this instance has read the
// whole log (it appends a NOOP record and waits for it), or ctx ends.
func New(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Log == nil {
		return nil, errors.New("schema registry: Config.Log is required")
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	r := &Registry{cfg: cfg, log: lg, st: newState(), applied: -1, done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	cctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.consume(cctx)
	off, err := cfg.Log.Append(ctx, noopRecord())
	if err == nil {
		err = r.waitApplied(ctx, off)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("schema registry: reading the schemas log: %w", err)
	}
	return r, nil
}

func (r *Registry) consume(ctx context.Context) {
	defer close(r.done)
	err := r.cfg.Log.Consume(ctx, func(rec Record, off int64) {
		r.mu.Lock()
		if err := r.st.apply(rec); err != nil {
			r.log.Warn("skipping a _schemas record", zap.Int64("offset", off), zap.Error(err))
		}
		if off > r.applied {
			r.applied = off
		}
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	r.mu.Lock()
	r.consumeE = err
	r.cond.Broadcast()
	r.mu.Unlock()
}

// waitApplied blocks until the record at off has been applied.
func (r *Registry) waitApplied(ctx context.Context, off int64) error {
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.applied < off {
		if r.consumeE != nil {
			return r.consumeE
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting to read back offset %d (read up to %d): %w", off, r.applied, ctx.Err())
		}
		r.cond.Wait()
	}
	return nil
}

// Close stops consuming and closes the log.
func (r *Registry) Close() error {
	r.cancel()
	err := r.cfg.Log.Close()
	<-r.done
	return err
}

// write appends recs and waits until they are applied. Call with writeMu.
func (r *Registry) write(ctx context.Context, recs ...Record) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	off, err := r.cfg.Log.Append(ctx, recs...)
	if err != nil {
		return errStore(err)
	}
	if err := r.waitApplied(ctx, off); err != nil {
		return errf(http.StatusInternalServerError, CodeOperationTimeout, "Wrote to the schemas log but could not read it back: %v", err)
	}
	return nil
}

// RegisterRequest is the body of POST /subjects/{subject}/versions.
type RegisterRequest struct {
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	ID         int32       `json:"id,omitempty"`
	Version    int         `json:"version,omitempty"`
}

// Reference is a schema reference (not supported for Avro here: a request
// with references is rejected).
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func parseRequestSchema(req *RegisterRequest) (*schemas.Schema, *Error) {
	if t := strings.ToUpper(req.SchemaType); t != "" && t != "AVRO" {
		return nil, errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: schema type %q is not supported: weir's registry serves AVRO only", req.SchemaType)
	}
	if len(req.References) > 0 {
		return nil, errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: schema references are not supported: inline the referenced types")
	}
	if strings.TrimSpace(req.Schema) == "" {
		return nil, errf(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: empty schema")
	}
	s, err := schemas.Parse(req.Schema)
	if err != nil {
		return nil, errInvalidSchema(err)
	}
	return s, nil
}

func validSubject(s string) *Error {
	if s == "" || strings.ContainsAny(s, "\x00") || len(s) > 1024 {
		return errf(http.StatusUnprocessableEntity, CodeInvalidSubject, "Invalid subject %q", s)
	}
	return nil
}

// Register registers a schema under subject and returns its id: the
// existing id when the subject already has the schema (by identity), else
// a new version after the compatibility check.
func (r *Registry) Register(ctx context.Context, subj string, req RegisterRequest) (int32, error) {
	if e := validSubject(subj); e != nil {
		return 0, e
	}
	parsed, e := parseRequestSchema(&req)
	if e != nil {
		return 0, e
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()

	r.mu.RLock()
	st := r.st
	mode := st.mode(subj)
	var existing int32 = -1
	var previous []*schemas.Schema
	var prevVersions []int
	next := 1
	if s := st.subjects[subj]; s != nil {
		for _, v := range s.versions {
			if v.number >= next {
				next = v.number + 1
			}
			if v.deleted {
				continue
			}
			e := st.ids[v.id]
			if e.schema.Identity() == parsed.Identity() && existing < 0 {
				existing = v.id
			}
			previous = append(previous, e.schema)
			prevVersions = append(prevVersions, v.number)
		}
	}
	level := st.level(subj)
	id, known := st.byIdentity[parsed.Identity()]
	maxID := st.maxID
	var idTaken *schemaEntry
	if req.ID > 0 {
		idTaken = st.ids[req.ID]
	}
	r.mu.RUnlock()

	if mode == ModeReadOnly {
		return 0, errNotPermitted("Subject %s is in read-only mode", subj)
	}
	if req.ID > 0 || req.Version > 0 {
		if mode != ModeImport {
			return 0, errNotPermitted("Subject %s is not in import mode: registering with an explicit id or version needs mode IMPORT", subj)
		}
	}
	if existing >= 0 && req.ID <= 0 {
		return existing, nil
	}
	if mode == ModeImport {
		if req.ID <= 0 {
			return 0, errNotPermitted("Subject %s is in import mode: give the schema id to import", subj)
		}
		if idTaken != nil && idTaken.schema.Identity() != parsed.Identity() {
			return 0, errf(http.StatusUnprocessableEntity, CodeIDDoesNotMatch,
				"Schema id %d already holds a different schema; ids are immutable", req.ID)
		}
		if existing == req.ID {
			return existing, nil
		}
		id = req.ID
		if req.Version > 0 {
			next = req.Version
		}
	} else {
		if inc := schemas.Check(level, parsed, previous); len(inc) > 0 {
			return 0, incompatible(subj, level, inc, previous, prevVersions)
		}
		if !known {
			id = maxID + 1
		}
	}
	rec := schemaRecord(SchemaValue{Subject: subj, Version: next, ID: id, Schema: req.Schema})
	if err := r.write(ctx, rec); err != nil {
		return 0, err
	}
	r.log.Info("schema registered", zap.String("subject", subj), zap.Int("version", next), zap.Int32("id", id))
	return id, nil
}

// compatMessages renders incompatibilities as Confluent's verbose lists.
func compatMessages(level schemas.Level, inc []schemas.Incompatibility, previous []*schemas.Schema, versions []int) []string {
	var out []string
	last := -2
	for _, i := range inc {
		out = append(out, i.String())
		if i.Against != last {
			last = i.Against
			if i.Against >= 0 && i.Against < len(previous) {
				if versions != nil {
					out = append(out, fmt.Sprintf("{oldSchemaVersion: %d}", versions[i.Against]))
				}
				out = append(out, fmt.Sprintf("{oldSchema: '%s'}", previous[i.Against].Text()))
			}
		}
	}
	return append(out, fmt.Sprintf("{compatibility: '%s'}", level))
}

func incompatible(subj string, level schemas.Level, inc []schemas.Incompatibility, previous []*schemas.Schema, versions []int) *Error {
	msgs := compatMessages(level, inc, previous, versions)
	return errf(http.StatusConflict, CodeIncompatibleSchema,
		"Schema being registered is incompatible with an earlier schema for subject %q, details: [%s]", subj, strings.Join(msgs, ", "))
}
