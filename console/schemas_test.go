package console

import (
	"strings"
	"testing"

	"weir/internal/browsertest"
)

// TestSchemasPages: the registry page lists the subjects with their
// latest version and the global compatibility; a subject's page its
// versions, compatibility level, a version's schema and the diff of two
// versions (the added field as + lines); an unknown version is a 400
// naming the versions there are, an unknown subject a 404.
func TestSchemasPages(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	e := startEnv(t, envOptions{})
	registerAvro(t, e.reg, "views-value", pageViewSchema)
	registerAvro(t, e.reg, "views-value", strings.Replace(pageViewSchema, `{"name":"ms","type":"long"}]`,
		`{"name":"ms","type":"long"},{"name":"referrer","type":["null","string"],"default":null}]`, 1))
	registerAvro(t, e.reg, "orders-value", `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`)
	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900})
		checkPage(t, tab, "schemas", e.base+"schemas", 200)
		rows := browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#subjects tbody tr")].map(tr => [...tr.cells].slice(0, 2).map(c => c.textContent).join(" "))`)
		if strings.Join(rows, "; ") != "orders-value 1; views-value 2" {
			t.Errorf("subjects: %q", rows)
		}
		if got := tab.Text("#global-compat"); got != "BACKWARD" {
			t.Errorf("global compatibility %q", got)
		}
		checkPage(t, tab, "subject-diff", e.base+"schemas/views-value?from=1&to=2", 200)
		if got := tab.Text("#compat"); got != "BACKWARD" {
			t.Errorf("subject compatibility %q", got)
		}
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#versions tbody tr").length`); n != 2 {
			t.Errorf("%d versions", n)
		}
		added := browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#diff .add")].map(s => s.textContent)`)
		if !strings.Contains(strings.Join(added, "\n"), `"name": "referrer"`) || len(browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#diff .del")].map(s => s.textContent)`)) > 1 {
			t.Errorf("diff 1→2: added %q", added)
		}
		if !strings.Contains(tab.Text("#schema"), "referrer") {
			t.Errorf("the latest version is not shown")
		}
	}
	tab := br.Tab(t, browsertest.TabOptions{})
	if st := tab.Go(e.base + "schemas/views-value?version=7"); st != 400 || !strings.Contains(tab.Text("[role=alert]"), "views-value has versions 1, 2") {
		t.Errorf("version 7: status %d, alert %q", st, tab.Text("[role=alert]"))
	}
	if st := tab.Go(e.base + "schemas/nothing-value"); st != 404 || !strings.Contains(tab.Text("[role=alert]"), "does not exist") {
		t.Errorf("unknown subject: status %d, alert %q", st, tab.Text("[role=alert]"))
	}
}
