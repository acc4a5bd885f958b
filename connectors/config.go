package connectors

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type is the type of a config field. Decode normalizes every value to
// the Go type named in each constant's comment.
type Type int

const (
	String     Type = iota + 1 // string
	Int                        // int64
	Float                      // float64
	Bool                       // bool
	Duration                   // time.Duration; from "250ms"/"5s" or integer milliseconds
	Size                       // int64 bytes; from an integer or "64KiB", "10MiB", "1GB"
	StringList                 // []string; from a list of strings (or one string)
	StringMap                  // map[string]string; from an object of strings (whole numbers and bools as text)
	// Expression is for the attributes of pipeline transform steps
	// (pipelines.StepKind): an HCL expression compiled and evaluated per
	// record. Connector specs cannot declare it (Register rejects it).
	Expression
)

func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Int:
		return "int"
	case Float:
		return "float"
	case Bool:
		return "bool"
	case Duration:
		return "duration"
	case Size:
		return "size"
	case StringList:
		return "list(string)"
	case StringMap:
		return "map(string)"
	case Expression:
		return "expression"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Field declares one setting of a connector kind.
type Field struct {
	Name     string
	Type     Type
	Required bool
	// Default is the value used when the setting is absent, in any form
	// Decode accepts for Type (nil: the setting is absent from Config).
	Default any
	// Enum, for String fields, lists the accepted values.
	Enum []string
	Doc  string
	// Sensitive marks a secret (a password, a key): its value is never
	// printed (Redact) nor put in an error.
	Sensitive bool
}

// Redact returns cfg with the values of sensitive fields replaced by
// [redacted], for printing.
func (s Spec) Redact(cfg Config) Config {
	out := make(Config, len(cfg))
	for k, v := range cfg {
		if f, ok := s.Field(k); ok && f.Sensitive && v != "" {
			v = "[redacted]"
		}
		out[k] = v
	}
	return out
}

// Spec is the declared configuration of a connector kind: the one source
// of truth for decoding, validation and generated docs.
type Spec struct {
	Fields []Field
	// Blocks are nested, labelled blocks of settings (blocks.go).
	Blocks []Block
	// Validate, if set, checks cross-field rules after typed decoding.
	// Its errors should name the settings involved.
	Validate func(Config) error
}

// Config is a decoded connector config: field name → normalized value.
type Config map[string]any

func (s Spec) check() error {
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if f.Name == "" || f.Type < String || f.Type > StringMap {
			return fmt.Errorf("field %q: empty name or bad type", f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("field %q declared twice", f.Name)
		}
		seen[f.Name] = true
		if f.Default != nil {
			if _, err := normalize(f, f.Default); err != nil {
				return fmt.Errorf("default of %q: %v", f.Name, err)
			}
		}
	}
	return s.checkBlocks(seen)
}

// Field returns the declared field called name.
func (s Spec) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Decode checks raw against the spec: unknown settings are rejected,
// required ones must be present, values are converted to their field's
// type, defaults fill the rest, then Validate runs. Errors wrap ErrConfig
// and name the setting.
func (s Spec) Decode(raw map[string]any) (Config, error) {
	var unknown []string
	for k := range raw {
		_, field := s.Field(k)
		_, block := s.Block(k)
		if !field && !block {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%w: unknown setting %s (known: %s)", ErrConfig, strings.Join(unknown, ", "), strings.Join(s.knownNames(), ", "))
	}
	cfg := Config{}
	for _, f := range s.Fields {
		v, ok := raw[f.Name]
		if !ok || v == nil {
			if f.Required {
				return nil, fmt.Errorf("%w: setting %q (%s) is required: %s", ErrConfig, f.Name, f.Type, f.Doc)
			}
			if f.Default == nil {
				continue
			}
			v = f.Default
		}
		nv, err := normalize(f, v)
		if err != nil {
			if f.Sensitive { // the error may quote the value
				return nil, fmt.Errorf("%w: setting %q: want a %s", ErrConfig, f.Name, f.Type)
			}
			return nil, fmt.Errorf("%w: setting %q: %v", ErrConfig, f.Name, err)
		}
		cfg[f.Name] = nv
	}
	if err := s.decodeBlocks(raw, cfg); err != nil {
		return nil, err
	}
	if s.Validate != nil {
		if err := s.Validate(cfg); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if err := s.validateBlocks(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func normalize(f Field, v any) (any, error) {
	switch f.Type {
	case String:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a string, got %T", v)
		}
		if len(f.Enum) > 0 {
			for _, e := range f.Enum {
				if s == e {
					return s, nil
				}
			}
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
		}
		return s, nil
	case Int:
		return toInt(v)
	case Float:
		switch n := v.(type) {
		case float64:
			return n, nil
		case float32:
			return float64(n), nil
		}
		i, err := toInt(v)
		return float64(i), err
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want true or false, got %T", v)
		}
		return b, nil
	case Duration:
		switch d := v.(type) {
		case time.Duration:
			return d, nil
		case string:
			p, err := time.ParseDuration(d)
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration like 250ms, 5s or 1m", d)
			}
			return p, nil
		}
		ms, err := toInt(v)
		if err != nil {
			return nil, fmt.Errorf("want a duration (\"5s\") or milliseconds, got %T", v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	case Size:
		if s, ok := v.(string); ok {
			return ParseSize(s)
		}
		return toInt(v)
	case StringList:
		switch l := v.(type) {
		case string:
			return []string{l}, nil
		case []string:
			return append([]string(nil), l...), nil
		case []any:
			out := make([]string, len(l))
			for i, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("element %d: want a string, got %T", i, e)
				}
				out[i] = s
			}
			return out, nil
		}
		return nil, fmt.Errorf("want a list of strings, got %T", v)
	case StringMap:
		switch m := v.(type) {
		case map[string]string:
			out := make(map[string]string, len(m))
			for k, e := range m {
				out[k] = e
			}
			return out, nil
		case map[string]any:
			out := make(map[string]string, len(m))
			for k, e := range m {
				s, ok := e.(string)
				if !ok {
					// Numbers and bools are written naturally ({ n = 12 }).
					switch v := e.(type) {
					case bool:
						s, ok = strconv.FormatBool(v), true
					case int, int32, int64, float64:
						if i, err := toInt(e); err == nil {
							s, ok = strconv.FormatInt(i, 10), true
						}
					}
				}
				if !ok {
					return nil, fmt.Errorf("key %q: want a string, got %T", k, e)
				}
				out[k] = s
			}
			return out, nil
		}
		return nil, fmt.Errorf("want an object of strings, got %T", v)
	}
	return nil, fmt.Errorf("unknown type %v", f.Type)
}

func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint32:
		return int64(n), nil
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, fmt.Errorf("%v is not a whole number", n)
		}
		return int64(n), nil
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", n)
		}
		return i, nil
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}

// ParseSize parses a byte size: a plain integer or a number with a unit
// B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[strings.ToLower(unit)]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || f < 0 {
		return 0, fmt.Errorf("%q is not a size like 65536, 64KiB or 10MiB", s)
	}
	return int64(f * mult), nil
}

// Has reports whether the setting is present (given or defaulted).
func (c Config) Has(name string) bool { _, ok := c[name]; return ok }

// String returns a String setting ("" if absent).
func (c Config) String(name string) string { s, _ := c[name].(string); return s }

// Int returns an Int or Size setting (0 if absent).
func (c Config) Int(name string) int64 { i, _ := c[name].(int64); return i }

// Float returns a Float setting (0 if absent).
func (c Config) Float(name string) float64 { f, _ := c[name].(float64); return f }

// Bool returns a Bool setting (false if absent).
func (c Config) Bool(name string) bool { b, _ := c[name].(bool); return b }

// Duration returns a Duration setting (0 if absent).
func (c Config) Duration(name string) time.Duration { d, _ := c[name].(time.Duration); return d }

// Strings returns a StringList setting (nil if absent).
func (c Config) Strings(name string) []string { l, _ := c[name].([]string); return l }

// StringMap returns a StringMap setting (nil if absent).
func (c Config) StringMap(name string) map[string]string {
	m, _ := c[name].(map[string]string)
	return m
}

// RegistryConfigSetting is the setting of the Avro connectors holding
// their schema registry client's TLS and basic auth settings, with
// Confluent's client names (basic.auth.user.info,
// schema.registry.ssl.truststore.location, ...;
// kafkaclient.RegistryProperties). weir run fills it in from the broker
// block's client_config when it fills in the registry URL.
const RegistryConfigSetting = "schema_registry_config"

// RegistryConfigField declares RegistryConfigSetting in a kind's spec.
var RegistryConfigField = Field{Name: RegistryConfigSetting, Type: StringMap, Sensitive: true,
	Doc: "Schema registry client settings: basic.auth.user.info, schema.registry.ssl.truststore.location, schema.registry.ssl.keystore.location, schema.registry.ssl.key.password (weir run fills in its broker block's client_config with the registry URL)."}
