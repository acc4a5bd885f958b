package pipelines

import "weir/connectors"

func init() {
	RegisterStep(&StepKind{
		Name: "rename",
		Doc:  "Renames fields: rename { msg = \"message\" } renames msg to message (a field that is missing is left alone).",
		Free: &connectors.Field{Name: "<field>", Type: connectors.String, Doc: "the field to rename, and its new name"},
		New: func(a *StepArgs) Step {
			s := &renameStep{}
			for _, at := range a.Attrs() {
				s.from = append(s.from, at.Name)
				to, _ := a.StringOf(at)
				s.to = append(s.to, to)
			}
			return s
		},
	})
}

type renameStep struct{ from, to []string }

func (s *renameStep) Apply(ev *Event) (bool, error) {
	for i := range s.from {
		ev.Fields.Rename(s.from[i], s.to[i])
	}
	return true, nil
}
