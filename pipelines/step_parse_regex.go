package pipelines

import (
	"fmt"
	"regexp"

	"weir/connectors"
)

func init() {
	RegisterStep(&StepKind{
		Name: "parse_regex",
		Doc:  "Matches a field against a regular expression (Go RE2 syntax) and sets one field per named group, as in (?P<level>\\w+); a group that did not take part in the match sets nothing.",
		Spec: connectors.Spec{Fields: []connectors.Field{
			{Name: "field", Type: connectors.String, Default: "message", Doc: "the field to match (a string or bytes)"},
			{Name: "pattern", Type: connectors.String, Required: true, Doc: "the regular expression, with at least one named group; a record that does not match is a failure of the step"},
			OnError,
		}},
		New: newParseRegex,
	})
}

func newParseRegex(a *StepArgs) Step {
	s := &parseRegexStep{field: a.String("field")}
	at, ok := a.Attr("pattern")
	if !ok {
		return s
	}
	p, ok := a.StringOf(at)
	if !ok {
		return s
	}
	re, err := regexp.Compile(p)
	if err != nil {
		a.Error(at.Expr.Range(), "Invalid regular expression", fmt.Sprintf("The pattern does not compile: %v.", err))
		return s
	}
	s.re = re
	for i, n := range re.SubexpNames() {
		if n != "" {
			s.groups = append(s.groups, i)
			s.names = append(s.names, n)
		}
	}
	if len(s.names) == 0 {
		a.Error(at.Expr.Range(), "Regular expression without named groups", "parse_regex sets one field per named group, as in (?P<level>\\w+); this pattern has none.")
	}
	return s
}

type parseRegexStep struct {
	field  string
	re     *regexp.Regexp
	groups []int // submatch indexes of named groups
	names  []string
}

func (s *parseRegexStep) Apply(ev *Event) (bool, error) {
	str, err := fieldString(ev, s.field)
	if err != nil {
		return true, err
	}
	m := s.re.FindStringSubmatchIndex(str)
	if m == nil {
		return true, fmt.Errorf("field %q does not match %s", s.field, s.re)
	}
	for i, g := range s.groups {
		if m[2*g] >= 0 {
			ev.Fields.Set(s.names[i], str[m[2*g]:m[2*g+1]])
		}
	}
	return true, nil
}
