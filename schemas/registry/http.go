package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"weir/schemas"
)

// ContentType is the registry's response media type.
const ContentType = "application/vnd.schemaregistry.v1+json"

// Handler returns the Confluent Schema Registry REST API.
func (r *Registry) Handler() http.Handler {
	mux := http.NewServeMux()
	h := func(pattern string, fn func(http.ResponseWriter, *http.Request) error) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, req *http.Request) {
			if err := fn(w, req); err != nil {
				r.writeError(w, req, err)
			}
		})
	}
	h("GET /{$}", func(w http.ResponseWriter, _ *http.Request) error { return reply(w, map[string]any{}) })
	h("GET /subjects", r.getSubjects)
	h("GET /subjects/{subject}/versions", r.getVersions)
	h("POST /subjects/{subject}/versions", r.postVersion)
	h("POST /subjects/{subject}", r.lookup)
	h("DELETE /subjects/{subject}", r.deleteSubject)
	h("GET /subjects/{subject}/versions/{version}", r.getVersion)
	h("GET /subjects/{subject}/versions/{version}/schema", r.getVersionSchema)
	h("GET /subjects/{subject}/versions/{version}/referencedby", r.getReferencedBy)
	h("DELETE /subjects/{subject}/versions/{version}", r.deleteVersion)
	h("GET /schemas/ids/{id}", r.getSchemaByID)
	h("GET /schemas/ids/{id}/schema", r.getSchemaTextByID)
	h("GET /schemas/ids/{id}/versions", r.getIDVersions)
	h("GET /schemas/ids/{id}/subjects", r.getIDSubjects)
	h("GET /schemas/types", func(w http.ResponseWriter, _ *http.Request) error { return reply(w, []string{"AVRO"}) })
	h("GET /schemas", r.getSchemas)
	h("POST /compatibility/subjects/{subject}/versions/{version}", r.checkCompat)
	h("POST /compatibility/subjects/{subject}/versions", r.checkCompat)
	h("GET /config", r.getConfig)
	h("GET /config/{subject}", r.getConfig)
	h("PUT /config", r.putConfig)
	h("PUT /config/{subject}", r.putConfig)
	h("DELETE /config", r.deleteConfig)
	h("DELETE /config/{subject}", r.deleteConfig)
	h("GET /mode", r.getMode)
	h("GET /mode/{subject}", r.getMode)
	h("PUT /mode", r.putMode)
	h("PUT /mode/{subject}", r.putMode)
	h("DELETE /mode/{subject}", r.deleteMode)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		if req.Body != nil && req.ContentLength != 0 && !acceptedType(req.Header.Get("Content-Type")) {
			r.writeError(w, req, errf(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
				"HTTP 415 Unsupported Media Type: send %s or application/json", ContentType))
			return
		}
		_, pattern := mux.Handler(req)
		if pattern == "" {
			code := http.StatusNotFound
			if allowedElsewhere(mux, req) {
				code = http.StatusMethodNotAllowed
			}
			r.writeError(w, req, errf(code, code, "HTTP %d %s", code, http.StatusText(code)))
			return
		}
		mux.ServeHTTP(w, req)
	})
}

func allowedElsewhere(mux *http.ServeMux, req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == req.Method {
			continue
		}
		probe := req.Clone(context.Background())
		probe.Method = m
		if _, p := mux.Handler(probe); p != "" {
			return true
		}
	}
	return false
}

func acceptedType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case ContentType, "application/vnd.schemaregistry+json", "application/json", "application/octet-stream":
		return true
	}
	return false
}

func reply(w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (r *Registry) writeError(w http.ResponseWriter, req *http.Request, err error) {
	e := asError(err)
	if e.Status >= 500 {
		r.log.Warn("schema registry request failed", zap.String("method", req.Method), zap.String("path", req.URL.Path), zap.Error(err))
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e)
}

// readBody decodes the JSON body into v, within the size limit.
func (r *Registry) readBody(w http.ResponseWriter, req *http.Request, v any) error {
	body := http.MaxBytesReader(w, req.Body, r.cfg.MaxBodyBytes)
	b, err := io.ReadAll(body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return errf(http.StatusUnprocessableEntity, CodeSchemaTooLarge,
				"Schema too large: the request body exceeds the limit of %d bytes", r.cfg.MaxBodyBytes)
		}
		return errf(http.StatusBadRequest, CodeBadRequest, "Reading the request body: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errf(http.StatusBadRequest, CodeBadRequest, "Request body is not valid JSON: %v", err)
	}
	return nil
}

func boolParam(req *http.Request, name string) bool {
	v, _ := strconv.ParseBool(req.URL.Query().Get(name))
	return v
}

// parseVersion returns a version number, or -1 for "latest".
func parseVersion(s string) (int, error) {
	if s == "latest" || s == "-1" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 1 {
		return 0, errInvalidVersion(s)
	}
	return int(n), nil
}

func parseID(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, errf(http.StatusNotFound, CodeSchemaNotFound, "Schema %s not found", s)
	}
	return int32(n), nil
}

func (r *Registry) getSubjects(w http.ResponseWriter, req *http.Request) error {
	r.mu.RLock()
	names := r.st.subjectNames(boolParam(req, "deleted"), req.URL.Query().Get("subjectPrefix"))
	r.mu.RUnlock()
	return reply(w, names)
}

func (r *Registry) getVersions(w http.ResponseWriter, req *http.Request) error {
	subj := req.PathValue("subject")
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.st.subjects[subj]
	if s == nil {
		return errSubjectNotFound(subj)
	}
	live := s.live(boolParam(req, "deleted"))
	if len(live) == 0 {
		return errSubjectNotFound(subj)
	}
	out := make([]int, len(live))
	for i, v := range live {
		out[i] = v.number
	}
	return reply(w, out)
}

// SubjectSchema is the JSON of one subject version.
type SubjectSchema struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int32  `json:"id"`
	Schema  string `json:"schema"`
}

// findVersion resolves a version (-1: latest) under the read lock.
func (r *Registry) findVersion(subj string, n int, deleted bool) (*version, *Error) {
	s := r.st.subjects[subj]
	if s == nil {
		return nil, errSubjectNotFound(subj)
	}
	live := s.live(deleted)
	if n == -1 {
		if len(live) == 0 {
			return nil, errSubjectNotFound(subj)
		}
		return live[len(live)-1], nil
	}
	for _, v := range live {
		if v.number == n {
			return v, nil
		}
	}
	if len(s.live(true)) == 0 {
		return nil, errSubjectNotFound(subj)
	}
	return nil, errVersionNotFound(n)
}

func (r *Registry) subjectVersion(req *http.Request) (SubjectSchema, error) {
	subj := req.PathValue("subject")
	n, err := parseVersion(req.PathValue("version"))
	if err != nil {
		return SubjectSchema{}, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, e := r.findVersion(subj, n, boolParam(req, "deleted"))
	if e != nil {
		return SubjectSchema{}, e
	}
	return SubjectSchema{Subject: subj, Version: v.number, ID: v.id, Schema: r.st.ids[v.id].text}, nil
}

func (r *Registry) getVersion(w http.ResponseWriter, req *http.Request) error {
	ss, err := r.subjectVersion(req)
	if err != nil {
		return err
	}
	return reply(w, ss)
}

func (r *Registry) getVersionSchema(w http.ResponseWriter, req *http.Request) error {
	ss, err := r.subjectVersion(req)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, ss.Schema)
	return err
}

func (r *Registry) getReferencedBy(w http.ResponseWriter, req *http.Request) error {
	if _, err := r.subjectVersion(req); err != nil {
		return err
	}
	return reply(w, []int{}) // references are not supported, so none refer
}

func (r *Registry) entry(req *http.Request) (*schemaEntry, error) {
	id, err := parseID(req.PathValue("id"))
	if err != nil {
		return nil, err
	}
	r.mu.RLock()
	e := r.st.ids[id]
	r.mu.RUnlock()
	if e == nil {
		return nil, errSchemaIDNotFound(id)
	}
	return e, nil
}

func (r *Registry) getSchemaByID(w http.ResponseWriter, req *http.Request) error {
	e, err := r.entry(req)
	if err != nil {
		return err
	}
	_, err = w.Write(e.response)
	return err
}

func (r *Registry) getSchemaTextByID(w http.ResponseWriter, req *http.Request) error {
	e, err := r.entry(req)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, e.text)
	return err
}

func (r *Registry) getIDVersions(w http.ResponseWriter, req *http.Request) error {
	e, err := r.entry(req)
	if err != nil {
		return err
	}
	r.mu.RLock()
	out := r.st.usages(e.id, boolParam(req, "deleted"))
	r.mu.RUnlock()
	return reply(w, out)
}

func (r *Registry) getIDSubjects(w http.ResponseWriter, req *http.Request) error {
	e, err := r.entry(req)
	if err != nil {
		return err
	}
	r.mu.RLock()
	us := r.st.usages(e.id, boolParam(req, "deleted"))
	r.mu.RUnlock()
	out := []string{}
	for _, u := range us {
		if len(out) == 0 || out[len(out)-1] != u.Subject {
			out = append(out, u.Subject)
		}
	}
	return reply(w, out)
}

func (r *Registry) getSchemas(w http.ResponseWriter, req *http.Request) error {
	deleted := boolParam(req, "deleted")
	latestOnly := boolParam(req, "latestOnly")
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := []SubjectSchema{}
	for _, name := range r.st.subjectNames(deleted, req.URL.Query().Get("subjectPrefix")) {
		live := r.st.subjects[name].live(deleted)
		if latestOnly {
			live = live[len(live)-1:]
		}
		for _, v := range live {
			out = append(out, SubjectSchema{Subject: name, Version: v.number, ID: v.id, Schema: r.st.ids[v.id].text})
		}
	}
	return reply(w, out)
}

func (r *Registry) postVersion(w http.ResponseWriter, req *http.Request) error {
	var body RegisterRequest
	if err := r.readBody(w, req, &body); err != nil {
		return err
	}
	id, err := r.Register(req.Context(), req.PathValue("subject"), body)
	if err != nil {
		return err
	}
	return reply(w, map[string]int32{"id": id})
}

func (r *Registry) lookup(w http.ResponseWriter, req *http.Request) error {
	subj := req.PathValue("subject")
	var body RegisterRequest
	if err := r.readBody(w, req, &body); err != nil {
		return err
	}
	parsed, e := parseRequestSchema(&body)
	if e != nil {
		return e
	}
	deleted := boolParam(req, "deleted")
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := r.st.subjects[subj]
	if s == nil || len(s.live(deleted)) == 0 {
		return errSubjectNotFound(subj)
	}
	for _, v := range s.live(deleted) {
		e := r.st.ids[v.id]
		if e.schema.Identity() == parsed.Identity() {
			return reply(w, SubjectSchema{Subject: subj, Version: v.number, ID: v.id, Schema: e.text})
		}
	}
	return errSchemaNotFound()
}

func (r *Registry) checkCompat(w http.ResponseWriter, req *http.Request) error {
	subj := req.PathValue("subject")
	n := 0 // 0: every version the level asks for
	if vs := req.PathValue("version"); vs != "" {
		var err error
		if n, err = parseVersion(vs); err != nil {
			return err
		}
	}
	var body RegisterRequest
	if err := r.readBody(w, req, &body); err != nil {
		return err
	}
	parsed, e := parseRequestSchema(&body)
	if e != nil {
		return e
	}
	r.mu.RLock()
	level := r.st.level(subj)
	var previous []*schemas.Schema
	var versions []int
	if n != 0 {
		v, e := r.findVersion(subj, n, false)
		if e != nil {
			r.mu.RUnlock()
			return e
		}
		previous, versions = []*schemas.Schema{r.st.ids[v.id].schema}, []int{v.number}
	} else if s := r.st.subjects[subj]; s != nil {
		for _, v := range s.live(false) {
			previous = append(previous, r.st.ids[v.id].schema)
			versions = append(versions, v.number)
		}
	}
	r.mu.RUnlock()
	inc := schemas.Check(level, parsed, previous)
	out := map[string]any{"is_compatible": len(inc) == 0}
	if boolParam(req, "verbose") {
		msgs := []string{}
		if len(inc) > 0 {
			msgs = compatMessages(level, inc, previous, versions)
		}
		out["messages"] = msgs
	}
	return reply(w, out)
}

func subjectParam(req *http.Request) (string, bool) {
	s := req.PathValue("subject")
	return s, s == ""
}

func (r *Registry) getConfig(w http.ResponseWriter, req *http.Request) error {
	subj, global := subjectParam(req)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !global {
		if l, ok := r.st.levels[subj]; ok {
			return reply(w, map[string]string{"compatibilityLevel": l})
		}
		if !boolParam(req, "defaultToGlobal") {
			return errf(http.StatusNotFound, CodeSubjectCompatNotSet, "Subject '%s' does not have subject-level compatibility configured", subj)
		}
	}
	return reply(w, map[string]string{"compatibilityLevel": string(r.st.level(""))})
}

func (r *Registry) putConfig(w http.ResponseWriter, req *http.Request) error {
	subj, global := subjectParam(req)
	var body struct {
		Compatibility      string `json:"compatibility"`
		CompatibilityLevel string `json:"compatibilityLevel"`
	}
	if err := r.readBody(w, req, &body); err != nil {
		return err
	}
	raw := body.Compatibility
	if raw == "" {
		raw = body.CompatibilityLevel
	}
	level, err := schemas.ParseLevel(raw)
	if err != nil {
		return errInvalidCompatibility(raw)
	}
	if !global {
		if e := validSubject(subj); e != nil {
			return e
		}
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if err := r.write(req.Context(), configRecord(subj, global, string(level))); err != nil {
		return err
	}
	return reply(w, map[string]string{"compatibility": string(level)})
}

func (r *Registry) deleteConfig(w http.ResponseWriter, req *http.Request) error {
	subj, global := subjectParam(req)
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.RLock()
	prev, ok := r.st.levels[subj]
	if global {
		prev, ok = string(r.st.level("")), true
	}
	_, exists := r.st.subjects[subj]
	r.mu.RUnlock()
	if !ok {
		if !exists {
			return errSubjectNotFound(subj)
		}
		return errf(http.StatusNotFound, CodeSubjectCompatNotSet, "Subject '%s' does not have subject-level compatibility configured", subj)
	}
	if err := r.write(req.Context(), configRecord(subj, global, "")); err != nil {
		return err
	}
	return reply(w, map[string]string{"compatibility": prev, "compatibilityLevel": prev})
}

func (r *Registry) getMode(w http.ResponseWriter, req *http.Request) error {
	subj, global := subjectParam(req)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !global {
		if m, ok := r.st.modes[subj]; ok {
			return reply(w, map[string]string{"mode": m})
		}
		if !boolParam(req, "defaultToGlobal") {
			return errf(http.StatusNotFound, CodeSubjectModeNotSet, "Subject '%s' does not have subject-level mode configured", subj)
		}
	}
	return reply(w, map[string]string{"mode": r.st.mode("")})
}

func (r *Registry) putMode(w http.ResponseWriter, req *http.Request) error {
	subj, global := subjectParam(req)
	var body struct {
		Mode string `json:"mode"`
	}
	if err := r.readBody(w, req, &body); err != nil {
		return err
	}
	mode := strings.ToUpper(strings.TrimSpace(body.Mode))
	switch mode {
	case ModeReadWrite, ModeReadOnly, ModeImport:
	default:
		return errInvalidMode(body.Mode)
	}
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if mode == ModeImport && !boolParam(req, "force") {
		r.mu.RLock()
		n := len(r.st.subjectNames(true, ""))
		if !global {
			n = 0
			if s := r.st.subjects[subj]; s != nil {
				n = len(s.versions)
			}
		}
		r.mu.RUnlock()
		if n > 0 {
			return errNotPermitted("Cannot import since found existing subjects (use force=true to override)")
		}
	}
	if err := r.write(req.Context(), modeRecord(subj, global, mode)); err != nil {
		return err
	}
	return reply(w, map[string]string{"mode": mode})
}

func (r *Registry) deleteMode(w http.ResponseWriter, req *http.Request) error {
	subj := req.PathValue("subject")
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.RLock()
	prev, ok := r.st.modes[subj]
	r.mu.RUnlock()
	if !ok {
		return errf(http.StatusNotFound, CodeSubjectModeNotSet, "Subject '%s' does not have subject-level mode configured", subj)
	}
	if err := r.write(req.Context(), modeRecord(subj, false, "")); err != nil {
		return err
	}
	return reply(w, map[string]string{"mode": prev})
}

func (r *Registry) deleteSubject(w http.ResponseWriter, req *http.Request) error {
	subj := req.PathValue("subject")
	permanent := boolParam(req, "permanent")
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.RLock()
	s := r.st.subjects[subj]
	mode := r.st.mode(subj)
	var recs []Record
	deleted := []int{}
	var errOut error
	switch {
	case s == nil || len(s.versions) == 0:
		errOut = errSubjectNotFound(subj)
	case mode == ModeReadOnly:
		errOut = errNotPermitted("Subject %s is in read-only mode", subj)
	case !permanent && len(s.live(false)) == 0:
		errOut = errf(http.StatusNotFound, CodeSubjectSoftDeleted, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subj)
	case permanent && len(s.live(false)) > 0:
		errOut = errf(http.StatusNotFound, CodeSubjectNotSoftDeleted, "Subject '%s' was not deleted first before being permanently deleted", subj)
	default:
		for _, v := range s.versions {
			deleted = append(deleted, v.number)
			if permanent {
				recs = append(recs, schemaTombstone(subj, v.number))
			} else {
				recs = append(recs, schemaRecord(SchemaValue{Subject: subj, Version: v.number, ID: v.id, Schema: r.st.ids[v.id].text, Deleted: true}))
			}
		}
		if permanent {
			if _, ok := r.st.levels[subj]; ok {
				recs = append(recs, configRecord(subj, false, ""))
			}
			if _, ok := r.st.modes[subj]; ok {
				recs = append(recs, modeRecord(subj, false, ""))
			}
		}
	}
	r.mu.RUnlock()
	if errOut != nil {
		return errOut
	}
	if err := r.write(req.Context(), recs...); err != nil {
		return err
	}
	return reply(w, deleted)
}

func (r *Registry) deleteVersion(w http.ResponseWriter, req *http.Request) error {
	subj := req.PathValue("subject")
	n, err := parseVersion(req.PathValue("version"))
	if err != nil {
		return err
	}
	permanent := boolParam(req, "permanent")
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.RLock()
	mode := r.st.mode(subj)
	v, e := r.findVersion(subj, n, permanent)
	var rec Record
	var errOut error
	switch {
	case e != nil:
		// A soft-deleted version asked for without permanent.
		if !permanent && e.Code == CodeVersionNotFound {
			if dv, de := r.findVersion(subj, n, true); de == nil && dv.deleted {
				e = errf(http.StatusNotFound, CodeVersionSoftDeleted,
					"Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subj, n)
			}
		}
		errOut = e
	case mode == ModeReadOnly:
		errOut = errNotPermitted("Subject %s is in read-only mode", subj)
	case permanent && !v.deleted:
		errOut = errf(http.StatusNotFound, CodeVersionNotSoftDeleted,
			"Subject '%s' Version %d was not deleted first before being permanently deleted", subj, v.number)
	case permanent:
		rec = schemaTombstone(subj, v.number)
	default:
		rec = schemaRecord(SchemaValue{Subject: subj, Version: v.number, ID: v.id, Schema: r.st.ids[v.id].text, Deleted: true})
	}
	r.mu.RUnlock()
	if errOut != nil {
		return errOut
	}
	if err := r.write(req.Context(), rec); err != nil {
		return err
	}
	return reply(w, v.number)
}
