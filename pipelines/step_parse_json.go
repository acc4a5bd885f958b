package pipelines

import (
	"errors"
	"fmt"

	"weir/connectors"
	"weir/pipelines/codec"
)

func init() {
	RegisterStep(&StepKind{
		Name: "parse_json",
		Doc:  "Parses a field holding JSON text: an object's members become fields of the record (a member replaces the field of its name), or the whole value goes to target.",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "field", Type: connectors.String, Default: "message", Doc: "the field holding the JSON text (a string or bytes)"},
			{Name: "target", Type: connectors.String, Doc: "the field to put the parsed value in; unset, the JSON must be an object, whose members are merged into the record"},
			{Name: "remove_field", Type: connectors.Bool, Default: false, Doc: "remove field once parsed"},
			OnError,
		}},
		New: func(a *StepArgs) Step {
			return &parseJSONStep{field: a.String("field"), target: a.String("target"), removeField: a.Bool("remove_field")}
		},
	})
}

type parseJSONStep struct {
	field, target string
	removeField   bool
}

func (s *parseJSONStep) Apply(ev *Event) (bool, error) {
	b, err := fieldBytes(ev, s.field)
	if err != nil {
		return true, err
	}
	if s.target != "" {
		v, err := codec.ParseJSON(b)
		if err != nil {
			return true, fmt.Errorf("field %q: %w", s.field, err)
		}
		if s.removeField {
			ev.Fields.Delete(s.field)
		}
		ev.Fields.Set(s.target, v)
		return true, nil
	}
	// The object's members are parsed straight onto the end of the
	// event's fields, then merged as Set would (a member replaces the
	// field of its name, the last of duplicates wins).
	o := ev.Fields
	n := len(o.Keys)
	if err := codec.ParseObjectInto(o, b); err != nil {
		var no codec.NotObjectError
		if errors.As(err, &no) {
			return true, fmt.Errorf("field %q holds a JSON %s, not an object (set target to keep it)", s.field, no.Type)
		}
		return true, fmt.Errorf("field %q: %w", s.field, err)
	}
	if s.removeField {
		for i, k := range o.Keys[:n] {
			if k == s.field {
				copy(o.Keys[i:], o.Keys[i+1:])
				copy(o.Vals[i:], o.Vals[i+1:])
				o.Keys, o.Vals = o.Keys[:len(o.Keys)-1], o.Vals[:len(o.Vals)-1]
				n--
				break
			}
		}
	}
	w := n
	for j := n; j < len(o.Keys); j++ {
		k, v := o.Keys[j], o.Vals[j]
		i := 0
		for i < w && o.Keys[i] != k {
			i++
		}
		if i < w {
			o.Vals[i] = v
			continue
		}
		o.Keys[w], o.Vals[w] = k, v
		w++
	}
	clear(o.Keys[w:])
	clear(o.Vals[w:])
	o.Keys, o.Vals = o.Keys[:w], o.Vals[:w]
	return true, nil
}
