package connectors

import (
	"fmt"
	"sort"
	"strings"
)

// Block declares a nested, labelled, repeatable block of a connector's
// settings, written in HCL as
//
//	table "inventory.customers" { exclude_columns = ["notes"] }
//
// Decoded, Config[Type] is a []Config: one per block, in order, each
// holding its label under Label and its own Fields (defaults filled).
// Labels are unique among the blocks of one type.
type Block struct {
	// Type is the block type ("table"); it shares the namespace of the
	// spec's field names.
	Type string
	// Label names the block's one label ("name").
	Label string
	Doc   string
	// Fields are the block's own settings.
	Fields []Field
	// Validate, if set, checks one decoded block against the whole
	// decoded config (after Spec.Validate). Its errors should name the
	// settings involved; Decode prefixes the block's type and label.
	Validate func(cfg, block Config) error
	// Topic, if set, is the topic a source writes the records of this
	// block to (a mysql table's topic): pipelines let sinks and streams
	// refer to it as source.<name>.<type>["<label>"].topic.
	Topic func(cfg, block Config) string
}

// spec is the block's fields as a Spec, the label first.
func (b Block) spec() Spec {
	fs := append([]Field{{Name: b.Label, Type: String, Required: true, Doc: "the block's label"}}, b.Fields...)
	return Spec{Fields: fs}
}

// Field returns the block's field called name.
func (b Block) Field(name string) (Field, bool) { return Spec{Fields: b.Fields}.Field(name) }

// Block returns the declared block type called name.
func (s Spec) Block(name string) (Block, bool) {
	for _, b := range s.Blocks {
		if b.Type == name {
			return b, true
		}
	}
	return Block{}, false
}

func (s Spec) checkBlocks(seen map[string]bool) error {
	for _, b := range s.Blocks {
		if b.Type == "" || b.Label == "" {
			return fmt.Errorf("block %q: empty type or label name", b.Type)
		}
		if seen[b.Type] {
			return fmt.Errorf("block %q: name already declared", b.Type)
		}
		seen[b.Type] = true
		if err := b.spec().check(); err != nil {
			return fmt.Errorf("block %q: %v", b.Type, err)
		}
	}
	return nil
}

// decodeBlocks decodes raw's nested blocks into cfg.
func (s Spec) decodeBlocks(raw map[string]any, cfg Config) error {
	for _, b := range s.Blocks {
		v, ok := raw[b.Type]
		if !ok || v == nil {
			continue
		}
		var items []map[string]any
		switch l := v.(type) {
		case []map[string]any:
			items = l
		case []Config:
			for _, c := range l {
				items = append(items, c)
			}
		case []any:
			for i, e := range l {
				m, ok := e.(map[string]any)
				if !ok {
					if c, isCfg := e.(Config); isCfg {
						m, ok = c, true
					}
				}
				if !ok {
					return fmt.Errorf("%w: block %q, element %d: want an object of settings, got %T", ErrConfig, b.Type, i, e)
				}
				items = append(items, m)
			}
		default:
			return fmt.Errorf("%w: block %q: want a list of blocks, got %T", ErrConfig, b.Type, v)
		}
		sp := b.spec()
		out := make([]Config, 0, len(items))
		labels := map[string]bool{}
		for i, m := range items {
			label, _ := m[b.Label].(string)
			if label == "" {
				return fmt.Errorf("%w: block %q, element %d: the label %q is required", ErrConfig, b.Type, i, b.Label)
			}
			if labels[label] {
				return fmt.Errorf("%w: block %s %q is declared twice", ErrConfig, b.Type, label)
			}
			labels[label] = true
			c, err := sp.Decode(m)
			if err != nil {
				return fmt.Errorf("%w: block %s %q: %s", ErrConfig, b.Type, label, strings.TrimPrefix(err.Error(), ErrConfig.Error()+": "))
			}
			out = append(out, c)
		}
		cfg[b.Type] = out
	}
	return nil
}

// validateBlocks runs each block's Validate against the decoded config.
func (s Spec) validateBlocks(cfg Config) error {
	for _, b := range s.Blocks {
		if b.Validate == nil {
			continue
		}
		for _, bc := range cfg.Blocks(b.Type) {
			if err := b.Validate(cfg, bc); err != nil {
				return fmt.Errorf("%w: block %s %q: %w", ErrConfig, b.Type, bc.String(b.Label), err)
			}
		}
	}
	return nil
}

// Blocks returns the decoded blocks of type name (nil if none).
func (c Config) Blocks(name string) []Config { l, _ := c[name].([]Config); return l }

// BlockTopics lists, for a decoded config of a kind whose blocks name
// topics (Block.Topic), each block's label and topic, by block type.
func (s Spec) BlockTopics(cfg Config) map[string][][2]string {
	out := map[string][][2]string{}
	for _, b := range s.Blocks {
		if b.Topic == nil {
			continue
		}
		for _, bc := range cfg.Blocks(b.Type) {
			out[b.Type] = append(out[b.Type], [2]string{bc.String(b.Label), b.Topic(cfg, bc)})
		}
	}
	return out
}

// knownNames lists the spec's field and block names, sorted.
func (s Spec) knownNames() []string {
	var out []string
	for _, f := range s.Fields {
		out = append(out, f.Name)
	}
	for _, b := range s.Blocks {
		out = append(out, b.Type)
	}
	sort.Strings(out)
	return out
}
