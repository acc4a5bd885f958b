package pipelines

import "weir/connectors"

func init() {
	RegisterStep(&StepKind{
		Name: "remove",
		Doc:  "Removes fields from the record.",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "fields", Type: connectors.StringList, Required: true, Doc: "the fields to remove (missing ones are ignored)"},
		}},
		New: func(a *StepArgs) Step { return &removeStep{fields: a.Strings("fields")} },
	})
}

type removeStep struct{ fields []string }

func (s *removeStep) Apply(ev *Event) (bool, error) {
	for _, f := range s.fields {
		ev.Fields.Delete(f)
	}
	return true, nil
}
