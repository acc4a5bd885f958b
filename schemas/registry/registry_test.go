package registry

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/internal/srclient"
	"weir/schemas"
)

const (
	userV1 = `{"type":"record","name":"User","namespace":"app","fields":[{"name":"id","type":"int"},{"name":"name","type":"string"}]}`
	// userV1 reformatted: same identity.
	userV1b = `{ "name" : "app.User", "type" : "record", "doc": "users",
	  "fields" : [ {"name":"id","type":{"type":"int"}}, {"type":"string","name":"name"} ] }`
	userV2 = `{"type":"record","name":"User","namespace":"app","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":["null","string"],"default":null}]}`
	// userBad adds a field without default: not BACKWARD compatible.
	userBad = `{"type":"record","name":"User","namespace":"app","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":["null","string"],"default":null},{"name":"age","type":"int"}]}`
)

func avro(s string) sr.Schema { return sr.Schema{Schema: s, Type: sr.TypeAvro} }

func wantCode(t *testing.T, err error, code int, msgPart string) {
	t.Helper()
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want registry error %d", err, code)
	}
	if re.ErrorCode != code || !strings.Contains(re.Message, msgPart) {
		t.Fatalf("error %d %q, want %d containing %q", re.ErrorCode, re.Message, code, msgPart)
	}
}

func TestSRClientAgainstWeir(t *testing.T) {
	b := startBroker(t)
	tr := startRegistry(t, b)
	cl := tr.cl
	ctx := t.Context()

	types, err := cl.SupportedTypes(ctx)
	if err != nil || !reflect.DeepEqual(types, []sr.SchemaType{sr.TypeAvro}) {
		t.Fatalf("types = %v, %v", types, err)
	}
	s1, err := cl.CreateSchema(ctx, "users-value", avro(userV1))
	if err != nil {
		t.Fatal(err)
	}
	if s1.ID != 1 || s1.Version != 1 || s1.Subject != "users-value" {
		t.Fatalf("first schema = %+v", s1)
	}
	// Re-registering (even reformatted) returns the same id, no new version.
	id, err := cl.RegisterSchema(ctx, "users-value", avro(userV1b), -1, -1)
	if err != nil || id != s1.ID {
		t.Fatalf("re-register = %d, %v; want %d", id, err, s1.ID)
	}
	// The same schema in another subject gets the same id.
	other, err := cl.CreateSchema(ctx, "audit-value", avro(userV1b))
	if err != nil || other.ID != s1.ID || other.Version != 1 {
		t.Fatalf("other subject = %+v, %v", other, err)
	}
	s2, err := cl.CreateSchema(ctx, "users-value", avro(userV2))
	if err != nil || s2.ID != 2 || s2.Version != 2 {
		t.Fatalf("v2 = %+v, %v", s2, err)
	}
	// Lookup by schema, versions, by version, by id.
	got, err := cl.LookupSchema(ctx, "users-value", avro(userV1b))
	if err != nil || got.ID != 1 || got.Version != 1 {
		t.Fatalf("lookup = %+v, %v", got, err)
	}
	_, err = cl.LookupSchema(ctx, "users-value", avro(userBad))
	wantCode(t, err, CodeSchemaNotFound, "Schema not found")
	vs, err := cl.SubjectVersions(ctx, "users-value")
	if err != nil || !reflect.DeepEqual(vs, []int{1, 2}) {
		t.Fatalf("versions = %v, %v", vs, err)
	}
	latest, err := cl.SchemaByVersion(ctx, "users-value", -1)
	if err != nil || latest.Version != 2 || latest.Schema.Schema != userV2 {
		t.Fatalf("latest = %+v, %v", latest, err)
	}
	text, err := cl.SchemaTextByVersion(ctx, "users-value", 1)
	if err != nil || text != userV1 {
		t.Fatalf("text of v1 = %q, %v", text, err)
	}
	byID, err := cl.SchemaByID(ctx, 2)
	if err != nil || byID.Schema != userV2 {
		t.Fatalf("by id = %+v, %v", byID, err)
	}
	usages, err := cl.SchemaVersionsByID(ctx, 1)
	want := []sr.SubjectVersion{{Subject: "audit-value", Version: 1}, {Subject: "users-value", Version: 1}}
	if err != nil || !reflect.DeepEqual(usages, want) {
		t.Fatalf("versions of id 1 = %v, %v", usages, err)
	}
	subjectsOf1, err := cl.SubjectsByID(ctx, 1)
	if err != nil || !reflect.DeepEqual(subjectsOf1, []string{"audit-value", "users-value"}) {
		t.Fatalf("subjects of id 1 = %v, %v", subjectsOf1, err)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil || !reflect.DeepEqual(subjects, []string{"audit-value", "users-value"}) {
		t.Fatalf("subjects = %v, %v", subjects, err)
	}

	// Compatibility: checks and a rejected registration with reasons.
	res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), "users-value", -1, avro(userBad))
	if err != nil || res.Is || len(res.Messages) == 0 ||
		!strings.Contains(res.Messages[0], "READER_FIELD_MISSING_DEFAULT_VALUE") || !strings.Contains(res.Messages[0], "/fields/3") ||
		!strings.Contains(res.Messages[0], "'age'") {
		t.Fatalf("check = %+v, %v", res, err)
	}
	res, err = cl.CheckCompatibility(ctx, "users-value", 1, avro(userV2))
	if err != nil || !res.Is {
		t.Fatalf("v2 against v1 = %+v, %v", res, err)
	}
	_, err = cl.CreateSchema(ctx, "users-value", avro(userBad))
	wantCode(t, err, CodeIncompatibleSchema, "READER_FIELD_MISSING_DEFAULT_VALUE")
	wantCode(t, err, CodeIncompatibleSchema, "{oldSchemaVersion: 2}")

	// Config: global and per subject, defaultToGlobal.
	cr := cl.Compatibility(ctx)
	if cr[0].Err != nil || cr[0].Level != sr.CompatBackward {
		t.Fatalf("global config = %+v", cr[0])
	}
	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "users-value")
	if set[0].Err != nil || set[0].Level != sr.CompatNone {
		t.Fatalf("set config = %+v", set[0])
	}
	if _, err := cl.CreateSchema(ctx, "users-value", avro(userBad)); err != nil {
		t.Fatalf("NONE must accept anything: %v", err)
	}
	cr = cl.Compatibility(ctx, "audit-value")
	wantCode(t, cr[0].Err, CodeSubjectCompatNotSet, "audit-value")
	cr = cl.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), "audit-value")
	if cr[0].Err != nil || cr[0].Level != sr.CompatBackward {
		t.Fatalf("defaultToGlobal = %+v", cr[0])
	}
	reset := cl.ResetCompatibility(ctx, "users-value")
	if reset[0].Err != nil || reset[0].Level != sr.CompatNone {
		t.Fatalf("reset = %+v", reset[0])
	}

	// Deletes: soft, then permanent; the rules in between.
	err = cl.DeleteSchema(ctx, "users-value", 3, sr.HardDelete)
	wantCode(t, err, CodeVersionNotSoftDeleted, "was not deleted first")
	if err := cl.DeleteSchema(ctx, "users-value", 3, sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	err = cl.DeleteSchema(ctx, "users-value", 3, sr.SoftDelete)
	wantCode(t, err, CodeVersionSoftDeleted, "was soft deleted")
	if err := cl.DeleteSchema(ctx, "users-value", 3, sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	_, err = cl.DeleteSubject(ctx, "audit-value", sr.HardDelete)
	wantCode(t, err, CodeSubjectNotSoftDeleted, "not deleted first")
	deleted, err := cl.DeleteSubject(ctx, "audit-value", sr.SoftDelete)
	if err != nil || !reflect.DeepEqual(deleted, []int{1}) {
		t.Fatalf("soft delete = %v, %v", deleted, err)
	}
	_, err = cl.DeleteSubject(ctx, "audit-value", sr.SoftDelete)
	wantCode(t, err, CodeSubjectSoftDeleted, "was soft deleted")
	subjects, _ = cl.Subjects(ctx)
	if !reflect.DeepEqual(subjects, []string{"users-value"}) {
		t.Fatalf("subjects after soft delete = %v", subjects)
	}
	all, _ := cl.Subjects(sr.WithParams(ctx, sr.ShowDeleted))
	if !reflect.DeepEqual(all, []string{"audit-value", "users-value"}) {
		t.Fatalf("subjects with deleted = %v", all)
	}
	if _, err := cl.DeleteSubject(ctx, "audit-value", sr.HardDelete); err != nil {
		t.Fatal(err)
	}
	_, err = cl.SubjectVersions(ctx, "audit-value")
	wantCode(t, err, CodeSubjectNotFound, "audit-value")
	// The id stays resolvable: records written with it still decode.
	if _, err := cl.SchemaByID(ctx, 1); err != nil {
		t.Fatalf("id 1 after the subject was deleted: %v", err)
	}

	// Mode: READONLY refuses writes with 42205.
	m := cl.SetMode(ctx, sr.ModeReadOnly)
	if m[0].Err != nil || m[0].Mode != sr.ModeReadOnly {
		t.Fatalf("set mode = %+v", m[0])
	}
	_, err = cl.CreateSchema(ctx, "new-value", avro(userV1))
	wantCode(t, err, CodeOperationNotPermitted, "read-only")
	if m := cl.SetMode(ctx, sr.ModeReadWrite); m[0].Err != nil {
		t.Fatal(m[0].Err)
	}
	if m := cl.Mode(ctx); m[0].Err != nil || m[0].Mode != sr.ModeReadWrite {
		t.Fatalf("mode = %+v", m[0])
	}
}

// TestSerdeInterop: franz-go's sr.Serde (with goavro) and weir's Serde
// read each other's records.
func TestSerdeInterop(t *testing.T) {
	b := startBroker(t)
	tr := startRegistry(t, b)
	ctx := t.Context()
	ss, err := tr.cl.CreateSchema(ctx, "events-value", avro(userV2))
	if err != nil {
		t.Fatal(err)
	}
	gc, err := goavro.NewCodec(userV2)
	if err != nil {
		t.Fatal(err)
	}
	type rec = map[string]any
	var theirs sr.Serde
	theirs.Register(ss.ID, rec{},
		sr.EncodeFn(func(v any) ([]byte, error) { return gc.BinaryFromNative(nil, v) }),
		sr.DecodeFn(func(b []byte, v any) error {
			out, _, err := gc.NativeFromBinary(b)
			if err != nil {
				return err
			}
			*(v.(*rec)) = out.(rec)
			return nil
		}))
	mine := schemas.NewSerde(srclient.Source(tr.cl))

	in := rec{"id": int64(42), "name": "ann", "email": map[string]any{"string": "a@x"}}
	b1, err := theirs.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	id, got, err := mine.Decode(ctx, b1)
	if err != nil || id != int32(ss.ID) || !reflect.DeepEqual(got, any(in)) {
		t.Fatalf("weir decoded sr.Serde's record as %d %#v, %v", id, got, err)
	}
	b2, err := mine.Encode(ctx, int32(ss.ID), in)
	if err != nil {
		t.Fatal(err)
	}
	var back rec
	if err := theirs.Decode(b2, &back); err != nil || !reflect.DeepEqual(back, in) {
		t.Fatalf("sr.Serde decoded weir's record as %#v, %v", back, err)
	}
	// Decoding an id the registry does not know fails with ErrUnknownSchema.
	bad := append(schemas.AppendHeader(nil, 999), b2[5:]...)
	if _, _, err := mine.Decode(ctx, bad); !errors.Is(err, schemas.ErrUnknownSchema) {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestBadInput: every bad request gets Confluent's code, leaves the
// _schemas topic unchanged, and the registry keeps serving.
func TestBadInput(t *testing.T) {
	b := startBroker(t)
	tr := startRegistry(t, b)
	ctx := t.Context()
	if _, err := tr.cl.CreateSchema(ctx, "s", avro(userV1)); err != nil {
		t.Fatal(err)
	}
	before := endOffset(t, b)
	url := tr.srv.URL
	huge := `{"schema":"` + strings.Repeat(" ", 17<<20) + `"}`
	cases := []struct {
		method, path, body string
		status, code       int
		msg                string
	}{
		{"POST", "/subjects/s/versions", `{"schema":"{\"type\":\"record\"}"}`, 422, CodeInvalidSchema, "Invalid schema"},
		{"POST", "/subjects/s/versions", `{"schema":"not json"}`, 422, CodeInvalidSchema, "Invalid schema"},
		{"POST", "/subjects/s/versions", `{"schema":"\"int\"","schemaType":"PROTOBUF"}`, 422, CodeInvalidSchema, "PROTOBUF"},
		{"POST", "/subjects/s/versions", `{"schema":"\"int\"","references":[{"name":"x","subject":"y","version":1}]}`, 422, CodeInvalidSchema, "references"},
		{"POST", "/subjects/s/versions", `{"schema":`, 400, CodeBadRequest, "not valid JSON"},
		{"POST", "/subjects/s/versions", huge, 422, CodeSchemaTooLarge, "exceeds the limit"},
		{"POST", "/subjects/s/versions", `{"schema":"\"int\"","id":7}`, 422, CodeOperationNotPermitted, "import mode"},
		{"POST", "/subjects/s", `{"schema":"\"string\""}`, 404, CodeSchemaNotFound, "Schema not found"},
		{"POST", "/subjects/nope", `{"schema":"\"string\""}`, 404, CodeSubjectNotFound, "Subject 'nope' not found"},
		{"GET", "/subjects/nope/versions", "", 404, CodeSubjectNotFound, "Subject 'nope' not found"},
		{"GET", "/subjects/nope/versions/1", "", 404, CodeSubjectNotFound, "nope"},
		{"GET", "/subjects/s/versions/9", "", 404, CodeVersionNotFound, "Version 9 not found"},
		{"GET", "/subjects/s/versions/zero", "", 422, CodeInvalidVersion, "'zero' is not a valid version"},
		{"GET", "/subjects/s/versions/0", "", 422, CodeInvalidVersion, "not a valid version"},
		{"GET", "/schemas/ids/12345", "", 404, CodeSchemaNotFound, "Schema 12345 not found"},
		{"GET", "/schemas/ids/x", "", 404, CodeSchemaNotFound, "not found"},
		{"PUT", "/config", `{"compatibility":"SOMETIMES"}`, 422, CodeInvalidCompatibility, "Invalid compatibility level"},
		{"PUT", "/config/s", `{"compatibility":""}`, 422, CodeInvalidCompatibility, "Invalid compatibility level"},
		{"PUT", "/mode", `{"mode":"WRITEONLY"}`, 422, CodeInvalidMode, "Invalid mode"},
		{"PUT", "/mode", `{"mode":"IMPORT"}`, 422, CodeOperationNotPermitted, "existing subjects"},
		{"DELETE", "/subjects/nope", "", 404, CodeSubjectNotFound, "nope"},
		{"DELETE", "/subjects/s?permanent=true", "", 404, CodeSubjectNotSoftDeleted, "not deleted first"},
		{"DELETE", "/subjects/s/versions/3", "", 404, CodeVersionNotFound, "Version 3"},
		{"DELETE", "/config/s", "", 404, CodeSubjectCompatNotSet, "subject-level compatibility"},
		{"POST", "/compatibility/subjects/s/versions/5", `{"schema":"\"int\""}`, 404, CodeVersionNotFound, "Version 5"},
		{"POST", "/compatibility/subjects/s/versions/latest", `{"schema":"{"}`, 422, CodeInvalidSchema, "Invalid schema"},
		{"GET", "/nothing/here", "", 404, 404, "Not Found"},
		{"PATCH", "/subjects", "", 405, 405, "Method Not Allowed"},
	}
	for _, c := range cases {
		req, err := http.NewRequestWithContext(ctx, c.method, url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ContentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := fmt.Sprintf(`"error_code":%d`, c.code)
		if resp.StatusCode != c.status || !strings.Contains(string(body), want) || !strings.Contains(string(body), c.msg) {
			t.Errorf("%s %s: %d %s; want %d %s %q", c.method, c.path, resp.StatusCode, body, c.status, want, c.msg)
		}
		if ct := resp.Header.Get("Content-Type"); ct != ContentType {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
	}
	// An unsupported request media type.
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/subjects/s/versions", strings.NewReader(`{"schema":"\"int\""}`))
	req.Header.Set("Content-Type", "text/xml")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 415 {
		t.Errorf("text/xml body: status %d, want 415", resp.StatusCode)
	}
	if after := endOffset(t, b); after != before {
		t.Fatalf("_schemas end offset moved from %d to %d on bad input", before, after)
	}
	// Still serving, and plain application/json works too.
	req, _ = http.NewRequestWithContext(ctx, "POST", url+"/subjects/s/versions", strings.NewReader(`{"schema":"{\"type\":\"record\",\"name\":\"User\",\"namespace\":\"app\",\"fields\":[{\"name\":\"id\",\"type\":\"int\"},{\"name\":\"name\",\"type\":\"string\"}]}"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"id":1}` {
		t.Fatalf("after bad input: %d %s", resp.StatusCode, body)
	}
}

// TestRestartKeepsIDs: a new registry over the same topic sees every
// schema, version, config and deletion, with the same ids.
func TestRestartKeepsIDs(t *testing.T) {
	b := startBroker(t)
	tr := startRegistry(t, b)
	ctx := t.Context()
	texts := map[int]string{}
	for i, subj := range []string{"a-value", "b-value", "c-value"} {
		s := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"f","type":"string"}]}`, i)
		ss, err := tr.cl.CreateSchema(ctx, subj, avro(s))
		if err != nil {
			t.Fatal(err)
		}
		texts[ss.ID] = s
	}
	if _, err := tr.cl.CreateSchema(ctx, "d-value", avro(texts[2])); err != nil {
		t.Fatal(err)
	}
	if r := tr.cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFullTransitive}, "a-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := tr.cl.DeleteSubject(ctx, "c-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	before, err := tr.cl.AllSchemas(sr.WithParams(ctx, sr.ShowDeleted))
	if err != nil {
		t.Fatal(err)
	}
	tr.stop()

	tr2 := startRegistry(t, b)
	after, err := tr2.cl.AllSchemas(sr.WithParams(ctx, sr.ShowDeleted))
	if err != nil {
		t.Fatal(err)
	}
	sortSS := func(s []sr.SubjectSchema) {
		sort.Slice(s, func(i, j int) bool {
			return s[i].Subject+fmt.Sprint(s[i].Version) < s[j].Subject+fmt.Sprint(s[j].Version)
		})
	}
	sortSS(before)
	sortSS(after)
	if len(before) != 4 || !reflect.DeepEqual(before, after) {
		t.Fatalf("after restart:\n%+v\nbefore:\n%+v", after, before)
	}
	for id, text := range texts {
		s, err := tr2.cl.SchemaByID(ctx, id)
		if err != nil || s.Schema != text {
			t.Fatalf("id %d after restart = %q, %v", id, s.Schema, err)
		}
	}
	live, _ := tr2.cl.Subjects(ctx)
	if !reflect.DeepEqual(live, []string{"a-value", "b-value", "d-value"}) {
		t.Fatalf("live subjects after restart = %v", live)
	}
	if c := tr2.cl.Compatibility(ctx, "a-value"); c[0].Err != nil || c[0].Level != sr.CompatFullTransitive {
		t.Fatalf("config after restart = %+v", c[0])
	}
	// A new schema continues the id sequence.
	ss, err := tr2.cl.CreateSchema(ctx, "e-value", avro(`"string"`))
	if err != nil || ss.ID != 4 {
		t.Fatalf("new schema after restart = %+v, %v", ss, err)
	}
}
