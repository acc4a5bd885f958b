package pipelines

import (
	"weir/connectors"
	"weir/pipelines/expr"
)

func init() {
	RegisterStep(&StepKind{
		Name: "filter",
		Doc:  "Keeps the records for which condition is true and drops the others.",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "condition", Type: connectors.Expression, Required: true, Doc: "an expression over the record; only true keeps the record (false, null and other values drop it)"},
			OnError,
		}},
		New: func(a *StepArgs) Step { return &filterStep{cond: a.Expr("condition")} },
	})
}

type filterStep struct{ cond expr.Fn }

func (s *filterStep) Apply(ev *Event) (bool, error) {
	v, err := s.cond(ev.Fields)
	if err != nil {
		return true, err
	}
	return expr.Truthy(v), nil
}
