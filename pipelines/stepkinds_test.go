package pipelines_test

import (
	"strings"
	"testing"

	"weir/connectors"
	"weir/pipelines"
	"weir/pipelines/expr"
)

// upperStep is a step kind declared outside the package, as a new step
// kind is: one type with Apply and one registration.
type upperStep struct{ fields []string }

func (s *upperStep) Apply(ev *pipelines.Event) (bool, error) {
	for _, f := range s.fields {
		if v, ok := ev.Fields.Get(f); ok {
			str, err := expr.ToString(v)
			if err != nil {
				return true, err
			}
			ev.Fields.Set(f, strings.ToUpper(str))
		}
	}
	return true, nil
}

func init() {
	pipelines.RegisterStep(&pipelines.StepKind{
		Name: "test_upper",
		Doc:  "Upper-cases fields (a test kind).",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "fields", Type: connectors.StringList, Required: true, Doc: "the fields to upper-case"},
			pipelines.OnError,
		}},
		New: func(a *pipelines.StepArgs) pipelines.Step { return &upperStep{fields: a.Strings("fields")} },
	})
}

func TestRegisteredStepKind(t *testing.T) {
	t.Parallel()
	cfg, diags := loadOne("upper.hcl", []byte(`
topic "in" {}
topic "out" {}
stream "s" {
  from = [topic.in]
  to   = "out"
  test_upper {
    fields   = ["level"]
    on_error = "drop"
  }
}
`))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	ev := &pipelines.Event{Fields: &expr.Object{}}
	ev.Fields.Set("level", "warn")
	if out, err := cfg.Streams[0].Steps.Apply(ev); out != pipelines.Keep || err != nil {
		t.Fatalf("Apply: %v, %v", out, err)
	}
	if v, _ := ev.Fields.Get("level"); v != "WARN" {
		t.Fatalf("level = %v, want WARN", v)
	}
	ev.Fields.Set("level", []any{"x"})
	if out, err := cfg.Streams[0].Steps.Apply(ev); out != pipelines.Drop || err == nil || !strings.Contains(err.Error(), "test_upper at upper.hcl:7") {
		t.Fatalf("Apply of a list: %v, %v; want Drop and the step's error", out, err)
	}

	_, diags = loadOne("upper.hcl", []byte(`
topic "in" {}
stream "s" {
  from = [topic.in]
  to   = "out"
  test_upper {
    feilds = ["level"]
  }
}
`))
	got := diagText(diags)
	for _, want := range []string{`upper.hcl:7:5: error: Unsupported argument: An argument named "feilds" is not expected here. Did you mean "fields"?`,
		`upper.hcl:6:14: error: Missing required argument: The argument "fields" is required, but no definition was found.`} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, got)
		}
	}
}
