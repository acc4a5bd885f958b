package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"weir/schemas"
)

// state is the registry as rebuilt from the _schemas records. It is
// guarded by Registry.mu: apply runs under the write lock, queries under
// the read lock.
type state struct {
	subjects   map[string]*subject
	ids        map[int32]*schemaEntry
	byIdentity map[string]int32
	maxID      int32

	globalLevel string // "" = default
	levels      map[string]string
	globalMode  string // "" = READWRITE
	modes       map[string]string
}

type subject struct {
	versions []*version // sorted by number
}

type version struct {
	number  int
	id      int32
	deleted bool
}

type schemaEntry struct {
	id     int32
	text   string
	schema *schemas.Schema
	// response is the precomputed GET /schemas/ids/{id} body.
	response []byte
}

func newState() *state {
	return &state{
		subjects:   map[string]*subject{},
		ids:        map[int32]*schemaEntry{},
		byIdentity: map[string]int32{},
		levels:     map[string]string{},
		modes:      map[string]string{},
	}
}

// apply applies one record. Records it cannot understand are reported
// and skipped: one bad record must not stop the registry.
func (st *state) apply(r Record) error {
	k, err := decodeKey(r.Key)
	if err != nil {
		return err
	}
	subj := ""
	if k.Subject != nil {
		subj = *k.Subject
	}
	switch k.KeyType {
	case keySchema:
		if len(r.Value) == 0 {
			st.removeVersion(subj, k.Version)
			return nil
		}
		var v SchemaValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("_schemas SCHEMA value for %s/%d: %w", subj, k.Version, err)
		}
		return st.putVersion(v)
	case keyConfig:
		if len(r.Value) == 0 {
			st.setLevel(k.Subject, "")
			return nil
		}
		var v ConfigValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("_schemas CONFIG value: %w", err)
		}
		st.setLevel(k.Subject, v.CompatibilityLevel)
	case keyMode:
		if len(r.Value) == 0 {
			st.setMode(k.Subject, "")
			return nil
		}
		var v ModeValue
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("_schemas MODE value: %w", err)
		}
		st.setMode(k.Subject, v.Mode)
	case keyNoop:
	default:
		// Confluent's DELETE_SUBJECT, CLEAR_SUBJECT and future key types:
		// weir writes SCHEMA records for deletes, so these carry nothing
		// it needs.
	}
	return nil
}

func (st *state) setLevel(subj *string, level string) {
	if subj == nil {
		st.globalLevel = level
	} else if level == "" {
		delete(st.levels, *subj)
	} else {
		st.levels[*subj] = level
	}
}

func (st *state) setMode(subj *string, mode string) {
	if subj == nil {
		st.globalMode = mode
	} else if mode == "" {
		delete(st.modes, *subj)
	} else {
		st.modes[*subj] = mode
	}
}

func (st *state) putVersion(v SchemaValue) error {
	if _, ok := st.ids[v.ID]; !ok {
		parsed, err := schemas.Parse(v.Schema)
		if err != nil {
			return fmt.Errorf("_schemas schema id %d (%s/%d): %w", v.ID, v.Subject, v.Version, err)
		}
		body := map[string]any{"schema": v.Schema}
		st.ids[v.ID] = &schemaEntry{id: v.ID, text: v.Schema, schema: parsed, response: mustJSON(body)}
		if _, taken := st.byIdentity[parsed.Identity()]; !taken {
			st.byIdentity[parsed.Identity()] = v.ID
		}
	}
	if v.ID > st.maxID {
		st.maxID = v.ID
	}
	s := st.subjects[v.Subject]
	if s == nil {
		s = &subject{}
		st.subjects[v.Subject] = s
	}
	i := sort.Search(len(s.versions), func(i int) bool { return s.versions[i].number >= v.Version })
	if i < len(s.versions) && s.versions[i].number == v.Version {
		s.versions[i].id, s.versions[i].deleted = v.ID, v.Deleted
		return nil
	}
	s.versions = append(s.versions, nil)
	copy(s.versions[i+1:], s.versions[i:])
	s.versions[i] = &version{number: v.Version, id: v.ID, deleted: v.Deleted}
	return nil
}

func (st *state) removeVersion(subj string, number int) {
	s := st.subjects[subj]
	if s == nil {
		return
	}
	for i, v := range s.versions {
		if v.number == number {
			s.versions = append(s.versions[:i], s.versions[i+1:]...)
			break
		}
	}
	if len(s.versions) == 0 {
		delete(st.subjects, subj)
	}
	// The schema text stays known under its id: ids are immutable, and
	// other subjects (or old records in topics) may still use it.
}

// live returns the subject's versions, without soft-deleted ones unless
// deleted is set.
func (s *subject) live(deleted bool) []*version {
	var out []*version
	for _, v := range s.versions {
		if deleted || !v.deleted {
			out = append(out, v)
		}
	}
	return out
}

func (st *state) level(subj string) schemas.Level {
	if l, ok := st.levels[subj]; ok && subj != "" {
		return schemas.Level(l)
	}
	if st.globalLevel != "" {
		return schemas.Level(st.globalLevel)
	}
	return schemas.DefaultLevel
}

func (st *state) mode(subj string) string {
	if m, ok := st.modes[subj]; ok && subj != "" {
		return m
	}
	if st.globalMode != "" {
		return st.globalMode
	}
	return ModeReadWrite
}

// subjectNames lists subjects with live versions (or any, with deleted).
func (st *state) subjectNames(deleted bool, prefix string) []string {
	out := []string{}
	for name, s := range st.subjects {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if len(s.live(deleted)) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// usages lists the subject versions using id.
func (st *state) usages(id int32, deleted bool) []subjectVersion {
	out := []subjectVersion{}
	for name, s := range st.subjects {
		for _, v := range s.live(deleted) {
			if v.id == id {
				out = append(out, subjectVersion{Subject: name, Version: v.number})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Subject != out[j].Subject {
			return out[i].Subject < out[j].Subject
		}
		return out[i].Version < out[j].Version
	})
	return out
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}
