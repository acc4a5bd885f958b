package registry

import (
	"encoding/json"
	"fmt"
)

// The _schemas topic holds JSON keys and values shaped like Confluent
// Schema Registry's, so the topic reads the same to people who know it:
//
//	key {"keytype":"SCHEMA","subject":"s","version":3,"magic":1}
//	    value {"subject":"s","version":3,"id":7,"schema":"...","deleted":false}
//	    tombstone: the version was permanently deleted
//	key {"keytype":"CONFIG","subject":"s"|null,"magic":0}
//	    value {"compatibilityLevel":"FULL"}; tombstone: config removed
//	key {"keytype":"MODE","subject":"s"|null,"magic":0}
//	    value {"mode":"READONLY"}; tombstone: mode removed
//	key {"keytype":"NOOP","magic":0}
//	    written at startup to learn how far the log goes
//
// A soft delete rewrites a version's SCHEMA record with deleted=true, so
// compaction (cleanup.policy=compact, latest record per key) keeps exactly
// the state the registry shows.
const (
	keySchema = "SCHEMA"
	keyConfig = "CONFIG"
	keyMode   = "MODE"
	keyNoop   = "NOOP"
)

// Key is a _schemas record key.
type Key struct {
	KeyType string  `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
}

// SchemaValue is the value of a SCHEMA record.
type SchemaValue struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         int32  `json:"id"`
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType,omitempty"`
	Deleted    bool   `json:"deleted"`
}

// ConfigValue is the value of a CONFIG record.
type ConfigValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

// ModeValue is the value of a MODE record.
type ModeValue struct {
	Mode string `json:"mode"`
}

// Record is one _schemas record; Value nil is a tombstone.
type Record struct {
	Key, Value []byte
}

func subjectPtr(s string, global bool) *string {
	if global {
		return nil
	}
	return &s
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func schemaRecord(v SchemaValue) Record {
	return Record{
		Key:   mustJSON(Key{KeyType: keySchema, Subject: &v.Subject, Version: v.Version, Magic: 1}),
		Value: mustJSON(v),
	}
}

func schemaTombstone(subject string, version int) Record {
	return Record{Key: mustJSON(Key{KeyType: keySchema, Subject: &subject, Version: version, Magic: 1})}
}

func configRecord(subject string, global bool, level string) Record {
	r := Record{Key: mustJSON(Key{KeyType: keyConfig, Subject: subjectPtr(subject, global)})}
	if level != "" {
		r.Value = mustJSON(ConfigValue{CompatibilityLevel: level})
	}
	return r
}

func modeRecord(subject string, global bool, mode string) Record {
	r := Record{Key: mustJSON(Key{KeyType: keyMode, Subject: subjectPtr(subject, global)})}
	if mode != "" {
		r.Value = mustJSON(ModeValue{Mode: mode})
	}
	return r
}

func noopRecord() Record {
	return Record{Key: mustJSON(Key{KeyType: keyNoop}), Value: []byte("{}")}
}

// decodeKey parses a record key.
func decodeKey(b []byte) (Key, error) {
	var k Key
	if err := json.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("_schemas key %q: %w", truncate(b), err)
	}
	return k, nil
}

func truncate(b []byte) string {
	if len(b) > 100 {
		return string(b[:97]) + "..."
	}
	return string(b)
}
