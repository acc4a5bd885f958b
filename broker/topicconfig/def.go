package topicconfig

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sentinel errors. Both map to Kafka's INVALID_CONFIG (40).
var (
	// ErrUnknownConfig: the name is not a config Kafka accepts here.
	ErrUnknownConfig = errors.New("unknown config")
	// ErrInvalidValue: the value does not parse, is out of range, or
	// conflicts with another setting.
	ErrInvalidValue = errors.New("invalid config value")
)

// Type is a config's type, numbered as Kafka's DescribeConfigs ConfigType
// (so kmsg.ConfigType(t) converts).
type Type int8

// Config types, Kafka's wire numbers.
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

func (t Type) String() string {
	switch t {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeString:
		return "STRING"
	case TypeInt:
		return "INT"
	case TypeShort:
		return "SHORT"
	case TypeLong:
		return "LONG"
	case TypeDouble:
		return "DOUBLE"
	case TypeList:
		return "LIST"
	case TypeClass:
		return "CLASS"
	case TypePassword:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Source says where a config value comes from, numbered as Kafka's
// DescribeConfigs ConfigSource (so kmsg.ConfigSource(s) converts).
type Source int8

// Config sources, Kafka's wire numbers (and the dynamic broker ones in
// dynamic.go).
const (
	SourceUnknown            Source = 0
	SourceDynamicTopicConfig Source = 1
	SourceStaticBroker       Source = 4
	SourceDefault            Source = 5
)

func (s Source) String() string {
	switch s {
	case SourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBroker:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBroker:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBroker:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

// Synonym is a broker config that supplies a topic config's default. Values
// of the broker config are multiplied by Scale to get the topic value (for
// example log.retention.hours has Scale 3,600,000 for retention.ms).
type Synonym struct {
	Name  string
	Scale int64
}

// Def describes one config: its Kafka name, type, default, range and
// documentation.
type Def struct {
	Name string
	Type Type
	// Default is Kafka's default as a string; HasDefault false means the
	// config has no default (Kafka's null) and is only set explicitly.
	Default    string
	HasDefault bool
	// Synonyms are the broker configs that supply the topic default, in
	// precedence order (topic configs only).
	Synonyms []Synonym
	// Honoured is true when weir acts on the value (see the package doc).
	Honoured bool
	// Internal configs are accepted but not listed by Describe unless set.
	Internal bool
	// Doc is a one-line documentation string for DescribeConfigs.
	Doc string
	// dynamicOnly broker configs are not Kafka broker properties (no
	// static value; described only when set dynamically).
	dynamicOnly bool

	check func(v string) error // nil: any value of the type
}

// Validate parses v as the config's type and checks its range. The error
// wraps ErrInvalidValue and names the key, the value and what is allowed.
func (d *Def) Validate(v string) error {
	if err := d.checkValue(v); err != nil {
		if d.Type == TypePassword {
			return fmt.Errorf("%w: invalid value for configuration %s: %s", ErrInvalidValue, d.Name, err.Error())
		}
		return fmt.Errorf("%w: invalid value %q for configuration %s: %s", ErrInvalidValue, v, d.Name, err.Error())
	}
	return nil
}

func (d *Def) checkValue(v string) error {
	v = strings.TrimSpace(v)
	switch d.Type {
	case TypeBoolean:
		if _, err := parseBool(v); err != nil {
			return err
		}
	case TypeInt:
		if _, err := parseInt(v, 32); err != nil {
			return err
		}
	case TypeShort:
		if _, err := parseInt(v, 16); err != nil {
			return err
		}
	case TypeLong:
		if _, err := parseInt(v, 64); err != nil {
			return err
		}
	case TypeDouble:
		if _, err := parseDouble(v); err != nil {
			return err
		}
	}
	if d.check != nil {
		return d.check(v)
	}
	return nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("expected a boolean: true or false")
}

func parseInt(v string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("out of range for a %d-bit integer", bits)
		}
		return 0, fmt.Errorf("expected a %d-bit integer", bits)
	}
	return n, nil
}

func parseDouble(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) {
		return 0, errors.New("expected a number")
	}
	return f, nil
}

// parseList splits a Kafka LIST value: comma-separated, each item trimmed;
// the empty string is the empty list.
func parseList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// ---- value checks (the type has already been parsed successfully) ----

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min {
			return fmt.Errorf("value must be at least %d", min)
		}
		return nil
	}
}

func between(min, max int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min || n > max {
			return fmt.Errorf("value must be between %d and %d", min, max)
		}
		return nil
	}
}

func doubleBetween(min, max float64) func(string) error {
	return func(v string) error {
		f, _ := strconv.ParseFloat(v, 64)
		if f < min || f > max {
			return fmt.Errorf("value must be between %g and %g", min, max)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("string must be one of: %s", strings.Join(allowed, ", "))
	}
}

func listOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, item := range parseList(v) {
			if err := oneOf(allowed...)(item); err != nil {
				return fmt.Errorf("list item %q is not allowed; items must be from: %s", item, strings.Join(allowed, ", "))
			}
		}
		return nil
	}
}

// throttledReplicas is Kafka's ThrottledReplicaListValidator: "*" or a list
// of partitionId:brokerId pairs.
func throttledReplicas(v string) error {
	items := parseList(v)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, item := range items {
		p, b, ok := strings.Cut(item, ":")
		if !ok {
			//lint:ignore ST1005 Kafka's own message for throttled-replica lists (ThrottledReplicaListValidator)
			return fmt.Errorf("must be the literal '*' or a list of replicas in the form [partitionId]:[brokerId],[partitionId]:[brokerId],...")
		}
		if _, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32); err != nil {
			return fmt.Errorf("partition id %q is not an integer", p)
		}
		if _, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32); err != nil {
			return fmt.Errorf("broker id %q is not an integer", b)
		}
	}
	return nil
}

// gzipLevel: -1 (the codec default) or 1..9, as Kafka's GZIP level validator.
func gzipLevel(v string) error {
	n, _ := strconv.ParseInt(v, 10, 64)
	if n == -1 || (n >= 1 && n <= 9) {
		return nil
	}
	return errors.New("value must be -1 or between 1 and 9")
}
