package pipelines

import (
	"weir/connectors"
	"weir/pipelines/expr"
)

func init() {
	RegisterStep(&StepKind{
		Name: "route",
		Doc:  "Sends the records for which condition is true to another topic instead of the component's own (the first route that matches wins; the others go on to the next step).",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "topic", Type: connectors.String, Required: true, Doc: "the topic matching records go to"},
			{Name: "condition", Type: connectors.Expression, Required: true, Doc: "an expression over the record; only true routes it"},
			OnError,
		}},
		New: func(a *StepArgs) Step {
			s := &routeStep{cond: a.Expr("condition")}
			if at, ok := a.Attr("topic"); ok {
				var ok bool
				if s.topic, ok = a.StringOf(at); ok {
					a.Route(s.topic, at.Expr.Range())
				}
			}
			return s
		},
	})
}

type routeStep struct {
	topic string
	cond  expr.Fn
}

func (s *routeStep) Apply(ev *Event) (bool, error) {
	if ev.Topic != "" {
		return true, nil // an earlier route won
	}
	v, err := s.cond(ev.Fields)
	if err != nil {
		return true, err
	}
	if expr.Truthy(v) {
		ev.Topic = s.topic
	}
	return true, nil
}
