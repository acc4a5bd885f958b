package topicconfig

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrInvalidRequest: the operations themselves are malformed (duplicate
// keys, APPEND/SUBTRACT on a non-list config, a missing value). Kafka
// answers these with INVALID_REQUEST (42), not INVALID_CONFIG.
var ErrInvalidRequest = errors.New("invalid config request")

// OpType is an IncrementalAlterConfigs operation, numbered as on the wire.
type OpType int8

// Operations, Kafka's wire numbers.
const (
	OpSet      OpType = 0
	OpDelete   OpType = 1
	OpAppend   OpType = 2
	OpSubtract OpType = 3
)

func (o OpType) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpDelete:
		return "DELETE"
	case OpAppend:
		return "APPEND"
	case OpSubtract:
		return "SUBTRACT"
	}
	return fmt.Sprintf("OpType(%d)", int8(o))
}

// Op is one IncrementalAlterConfigs operation on a topic config.
type Op struct {
	Type  OpType
	Name  string
	Value *string // ignored by DELETE
}

// ApplyOps applies IncrementalAlterConfigs operations to a topic's current
// overrides and returns the new overrides (current is not modified). It
// checks the operations (names known, no key twice, APPEND/SUBTRACT only on
// LIST configs, a value where one is needed); the caller then checks the
// values with Resolve. APPEND and SUBTRACT start from the effective value
// (the override, else the broker's value for the topic), and APPEND skips
// items already present, as Kafka does.
func (b *Broker) ApplyOps(current map[string]string, ops []Op) (map[string]string, error) {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, fmt.Errorf("%w: duplicate config key %s in one request", ErrInvalidRequest, op.Name)
		}
		seen[op.Name] = true
	}
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	base := Resolved{broker: b, overrides: current}
	for _, op := range ops {
		d, ok := topicByName[op.Name]
		if !ok {
			return nil, fmt.Errorf("%w: unknown topic config name: %s", ErrUnknownConfig, op.Name)
		}
		if op.Type != OpDelete && op.Value == nil {
			return nil, fmt.Errorf("%w: %s of config %s needs a value (got null)", ErrInvalidRequest, op.Type, op.Name)
		}
		switch op.Type {
		case OpSet:
			next[op.Name] = *op.Value
		case OpDelete:
			delete(next, op.Name)
		case OpAppend, OpSubtract:
			if d.Type != TypeList {
				return nil, fmt.Errorf("%w: config value %s is not allowed for config key %s (type %s, not LIST)",
					ErrInvalidRequest, op.Type, op.Name, d.Type)
			}
			old, _, _ := base.Value(op.Name)
			items := parseList(old)
			change := parseList(*op.Value)
			if op.Type == OpAppend {
				for _, c := range change {
					if !slices.Contains(items, c) {
						items = append(items, c)
					}
				}
			} else {
				items = slices.DeleteFunc(items, func(s string) bool { return slices.Contains(change, s) })
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, fmt.Errorf("%w: unknown operation %d on config %s", ErrInvalidRequest, int8(op.Type), op.Name)
		}
	}
	return next, nil
}
