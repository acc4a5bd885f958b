package browsertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

var axeSource = sync.OnceValues(func() (string, error) {
	path := os.Getenv("WEIR_AXE_JS")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		prefix := filepath.Join(home, ".cache", "weir", "axe-core")
		path = filepath.Join(prefix, "node_modules", "axe-core", "axe.min.js")
		if _, err := os.Stat(path); err != nil {
			npm, lerr := exec.LookPath("npm")
			if lerr != nil {
				return "", fmt.Errorf("browsertest: axe-core not found at %s and npm not found to install it", path)
			}
			out, err := exec.Command(npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", prefix, "axe-core@"+AxeVersion).CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("browsertest: npm install axe-core@%s: %v: %s", AxeVersion, err, out)
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("browsertest: axe-core not found: %w", err)
	}
	return string(b), nil
})

// AxeTags are the axe-core rule sets CheckA11y runs: WCAG 2.1 A and AA
// (labels, names, contrast, landmarks in use, language...) and axe's best
// practices (one main landmark, content inside landmarks, headings).
var AxeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"}

// axeResult is what CheckA11y reads of axe.run's results.
type axeResult struct {
	Violations []struct {
		ID          string
		Impact      string
		Description string
		Nodes       []struct {
			Target         []any
			FailureSummary string
		}
	}
	Passes int
}

// A11yViolations runs axe-core over the page and returns each violation
// of AxeTags as "rule (impact): description" followed by the elements
// and why.
func (p *Tab) A11yViolations() []string {
	p.t.Helper()
	src, err := axeSource()
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			unavailable(p.t, "%v", err)
		}
		p.t.Fatal(err)
	}
	if !Eval[bool](p, `typeof window.axe === "object"`) {
		Eval[bool](p, src+"\n;true")
	}
	tags := `["` + strings.Join(AxeTags, `","`) + `"]`
	res := Eval[axeResult](p, `axe.run(document, {runOnly: {type: "tag", values: `+tags+`}, resultTypes: ["violations"]}).then(r => ({Violations: r.violations, Passes: r.passes.length}))`)
	if res.Passes == 0 {
		p.t.Fatal("browsertest: axe-core ran no rule that passed: is the page empty?")
	}
	var out []string
	for _, v := range res.Violations {
		var where []string
		for _, n := range v.Nodes {
			where = append(where, fmt.Sprintf("%v: %s", n.Target, strings.ReplaceAll(n.FailureSummary, "\n", " ")))
		}
		out = append(out, fmt.Sprintf("%s (%s): %s\n\t%s", v.ID, v.Impact, v.Description, strings.Join(where, "\n\t")))
	}
	return out
}

// CheckA11y fails the test on every violation of AxeTags on the page,
// listing the rule, the elements and why.
func (p *Tab) CheckA11y(what string) {
	p.t.Helper()
	for _, v := range p.A11yViolations() {
		p.t.Errorf("%s: accessibility: %s", what, v)
	}
}
