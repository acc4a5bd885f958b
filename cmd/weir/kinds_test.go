package main

import (
	"strings"
	"testing"

	"weir/connectors"
)

// TestKindsDocumented: every source, sink and step kind weir registers
// documents itself, every setting, every nested block and its settings,
// so weir kinds prints a complete reference.
func TestKindsDocumented(t *testing.T) {
	t.Parallel()
	refs := kindRefs()
	count := map[string]int{}
	for _, r := range refs {
		count[r.Type]++
		what := r.Type + " " + r.Name
		if strings.TrimSpace(r.Doc) == "" {
			t.Errorf("%s has no Doc", what)
		}
		check := func(where string, fs []connectors.Field) {
			for _, f := range fs {
				if strings.TrimSpace(f.Doc) == "" {
					t.Errorf("%s: %s %q has no Doc", what, where, f.Name)
				}
			}
		}
		check("setting", r.Spec.Fields)
		check("pipeline setting", r.Meta)
		if r.Free != nil {
			check("attribute", []connectors.Field{*r.Free})
		}
		for _, b := range r.Spec.Blocks {
			if strings.TrimSpace(b.Doc) == "" {
				t.Errorf("%s: block %q has no Doc", what, b.Type)
			}
			check("block "+b.Type+" setting", b.Fields)
		}
		if r.Free == nil && len(r.Spec.Fields) == 0 {
			t.Errorf("%s declares no settings", what)
		}
	}
	// The kinds weir ships: a kind that stops registering is a bug too.
	if count["source"] < 4 || count["sink"] < 4 || count["step"] < 8 {
		t.Errorf("kinds by type %v, want at least 4 sources, 4 sinks and 8 steps", count)
	}
}

func TestKindsCommand(t *testing.T) {
	t.Parallel()
	list := mustWeir(t, "", "kinds")
	for _, want := range []string{`source mysql\s+Change data capture.*`, `sink elasticsearch\s+Bulk-indexes.*`, `step parse_timestamp\s+Parses a field.*`} {
		if !regexpLine(list, want) {
			t.Errorf("weir kinds: no line %q in\n%s", want, list)
		}
	}

	ref := mustWeir(t, "", "kinds", "parse_timestamp", "file")
	for _, want := range []string{
		`step parse_timestamp \{ ... \}`,
		`    set_record_time  \(bool; default true\)`,
		`    on_error  \(string; default "keep"; one of: keep, drop, dead_letter\)`,
		`source "file" "<name>" \{ ... \}`, `sink "file" "<name>" \{ ... \}`,
		`    include  \(list\(string\); required\)`,
		`    balancer  \(string; default "range"; one of: range, roundrobin, cooperative-sticky\)`,
	} {
		if !regexpLine(ref, want) {
			t.Errorf("weir kinds parse_timestamp file: no line %q in\n%s", want, ref)
		}
	}
	// A source's topic is a pipeline setting, not listed twice.
	if n := strings.Count(ref, "    topic  "); n != 1 {
		t.Errorf("topic listed %d times, want once:\n%s", n, ref)
	}

	md := mustWeir(t, "", "kinds", "--markdown", "mysql")
	for _, want := range []string{"## source `mysql`", "| `server_name` | string | required |", "### block `table \"<label>\"` (any number, each label once)"} {
		if !strings.Contains(md, want) {
			t.Errorf("weir kinds --markdown mysql: no %q in\n%s", want, md)
		}
	}

	all := mustWeir(t, "", "kinds", "--all")
	for _, r := range kindRefs() {
		if !strings.Contains(all, r.title()) {
			t.Errorf("weir kinds --all lacks %s", r.title())
		}
	}

	if _, _, err := runWeir(t, "", "kinds", "nosuch"); err == nil || !strings.Contains(err.Error(), `no kind named "nosuch" (known: elasticsearch, file,`) {
		t.Errorf("weir kinds nosuch: error %v", err)
	}
}
