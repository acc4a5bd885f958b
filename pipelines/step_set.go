package pipelines

import (
	"weir/connectors"
	"weir/pipelines/expr"
)

func init() {
	RegisterStep(&StepKind{
		Name: "set",
		Doc:  "Sets fields to the values of expressions over the record, all computed from the record as it was before the step: set { service = \"checkout\"  slow = record.ms > 500 }.",
		Free: &connectors.Field{Name: "<field>", Type: connectors.Expression, Doc: "the field to set, and its value: an expression over record, var and local"},
		New: func(a *StepArgs) Step {
			s := &setStep{}
			attrs := a.Attrs()
			if len(attrs) == 0 && !a.HasErrors() {
				a.Error(a.Block.DefRange, "Empty set step", "set takes one attribute per field to set, as in: set { service = \"checkout\" }.")
			}
			for _, at := range attrs {
				s.names = append(s.names, at.Name)
				s.fns = append(s.fns, a.ExprOf(at))
			}
			return s
		},
	})
}

type setStep struct {
	names []string
	fns   []expr.Fn
}

func (s *setStep) Apply(ev *Event) (bool, error) {
	// Every value is computed from the record as it was before the step.
	var stack [8]any
	vals := stack[:0]
	for _, f := range s.fns {
		v, err := f(ev.Fields)
		if err != nil {
			return true, err
		}
		vals = append(vals, v)
	}
	for i, n := range s.names {
		ev.Fields.Set(n, vals[i])
	}
	return true, nil
}
