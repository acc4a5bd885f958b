package registry

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

func startMemRegistry(t *testing.T) (*MemLog, *sr.Client) {
	t.Helper()
	ml := NewMemLog()
	reg, err := New(t.Context(), Config{Log: ml})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() { srv.Close(); reg.Close() })
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	return ml, cl
}

// TestImportMode: in IMPORT mode schemas keep the ids and versions they
// had in another registry, and compatibility is not checked.
func TestImportMode(t *testing.T) {
	_, cl := startMemRegistry(t)
	ctx := t.Context()
	if m := cl.SetMode(ctx, sr.ModeImport); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	id, err := cl.RegisterSchema(ctx, "imp", avro(userV1), 100, 3)
	if err != nil || id != 100 {
		t.Fatalf("import = %d, %v", id, err)
	}
	// Incompatible, but imported: no check.
	if _, err := cl.RegisterSchema(ctx, "imp", avro(`"string"`), 101, 4); err != nil {
		t.Fatal(err)
	}
	// An id already holding another schema is refused.
	_, err = cl.RegisterSchema(ctx, "other", avro(`"long"`), 100, 1)
	wantCode(t, err, CodeIDDoesNotMatch, "already holds a different schema")
	if m := cl.SetMode(ctx, sr.ModeReadWrite); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	ss, err := cl.SchemaByVersion(ctx, "imp", 3)
	if err != nil || ss.ID != 100 {
		t.Fatalf("imported version = %+v, %v", ss, err)
	}
	// New ids continue after the largest imported one.
	s, err := cl.CreateSchema(ctx, "fresh", avro(`"boolean"`))
	if err != nil || s.ID != 102 {
		t.Fatalf("after import = %+v, %v", s, err)
	}
}

// TestStoreErrors: a failing log turns writes into 50001 errors, changes
// nothing, and the registry keeps serving reads and later writes.
func TestStoreErrors(t *testing.T) {
	ml, cl := startMemRegistry(t)
	ctx := t.Context()
	if _, err := cl.CreateSchema(ctx, "s", avro(userV1)); err != nil {
		t.Fatal(err)
	}
	n := ml.Len()
	ml.mu.Lock()
	ml.FailAppend = errors.New("disk on fire")
	ml.mu.Unlock()
	_, err := cl.CreateSchema(ctx, "s", avro(userV2))
	wantCode(t, err, CodeStoreError, "disk on fire")
	if ml.Len() != n {
		t.Fatalf("log grew from %d to %d", n, ml.Len())
	}
	vs, err := cl.SubjectVersions(ctx, "s")
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions after a failed write = %v, %v", vs, err)
	}
	ml.mu.Lock()
	ml.FailAppend = nil
	ml.mu.Unlock()
	if s, err := cl.CreateSchema(ctx, "s", avro(userV2)); err != nil || s.ID != 2 {
		t.Fatalf("after recovery = %+v, %v", s, err)
	}
}
