package console

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"
)

// errNoRegistry is shown where a page needs the registry and none is
// configured.
var errNoRegistry = statusError{http.StatusNotFound, errors.New("no schema registry is configured for the console (weir broker: --registry-addr; or schema.registry.url in --console-client-config)")}

type schemasData struct {
	Global   string
	Subjects []subjectRow
}

type subjectRow struct {
	Name   string
	Latest int
	ID     int
	Type   string
}

// schemasPage lists the registry's subjects with their latest version
// and the global compatibility level.
func (c *Console) schemasPage(w http.ResponseWriter, r *http.Request) {
	if c.reg == nil {
		c.render(w, r, "schemas", "Schema registry", schemasData{}, errNoRegistry)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	var d schemasData
	var errs []error
	if g := c.reg.Compatibility(ctx); len(g) == 1 {
		d.Global = g[0].Level.String()
		errs = append(errs, g[0].Err)
	}
	// One request: the latest schema of every subject.
	latest, err := c.reg.AllSchemas(sr.WithParams(ctx, sr.LatestOnly))
	errs = append(errs, err)
	for _, s := range latest {
		d.Subjects = append(d.Subjects, subjectRow{Name: s.Subject, Latest: s.Version, ID: s.ID, Type: s.Type.String()})
	}
	sort.Slice(d.Subjects, func(i, j int) bool { return d.Subjects[i].Name < d.Subjects[j].Name })
	c.render(w, r, "schemas", "Schema registry", d, errors.Join(errs...))
}

type subjectData struct {
	Subject       string
	Compatibility string
	Versions      []versionRow
	Shown         versionRow // the version shown (?version=, default latest)
	From, To      int        // the diff's versions (0: none)
	Diff          []diffLine
}

type versionRow struct {
	Version, ID int
	Type        string
	Text        string // indented
}

// subjectPage: a subject's versions, compatibility level, one version's
// schema and the diff of two versions (?from=&to=).
func (c *Console) subjectPage(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	title := "Subject " + subject
	if c.reg == nil {
		c.render(w, r, "subject", title, nil, errNoRegistry)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	all, err := c.reg.Schemas(ctx, subject)
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			c.notFound(w, r, title, fmt.Sprintf("subject %q does not exist in the registry", subject))
			return
		}
		c.render(w, r, "subject", title, nil, err)
		return
	}
	d := subjectData{Subject: subject}
	for _, s := range all {
		d.Versions = append(d.Versions, versionRow{Version: s.Version, ID: s.ID, Type: s.Type.String(), Text: indentJSON([]byte(s.Schema.Schema))})
	}
	sort.Slice(d.Versions, func(i, j int) bool { return d.Versions[i].Version < d.Versions[j].Version })
	byVersion := func(param string) (versionRow, error) {
		s := r.URL.Query().Get(param)
		if s == "" || s == "latest" {
			return d.Versions[len(d.Versions)-1], nil
		}
		n, err := strconv.Atoi(s)
		for _, v := range d.Versions {
			if err == nil && v.Version == n {
				return v, nil
			}
		}
		return versionRow{}, badInput("%s %q: %s has versions %s", param, s, subject, versionList(d.Versions))
	}
	var errs []error
	if len(d.Versions) > 0 {
		var err error
		if d.Shown, err = byVersion("version"); err != nil {
			c.render(w, r, "subject", title, d, err)
			return
		}
		q := r.URL.Query()
		if q.Get("from") != "" || q.Get("to") != "" {
			from, err1 := byVersion("from")
			to, err2 := byVersion("to")
			if err := errors.Join(err1, err2); err != nil {
				c.render(w, r, "subject", title, d, err)
				return
			}
			d.From, d.To = from.Version, to.Version
			d.Diff = diffLines(strings.Split(from.Text, "\n"), strings.Split(to.Text, "\n"))
		}
	}
	if cr := c.reg.Compatibility(sr.WithParams(ctx, sr.DefaultToGlobal), subject); len(cr) == 1 {
		d.Compatibility = cr[0].Level.String()
		errs = append(errs, cr[0].Err)
	}
	c.render(w, r, "subject", title, d, errors.Join(errs...))
}

func versionList(vs []versionRow) string {
	var s []string
	for _, v := range vs {
		s = append(s, strconv.Itoa(v.Version))
	}
	return strings.Join(s, ", ")
}

// diffLine is one line of a diff: Op is ' ', '+' or '-'.
type diffLine struct {
	Op   string
	Text string
}

// maxDiffLines bounds the diff's quadratic table.
const maxDiffLines = 3000

// diffLines is the line diff of a to b (longest common subsequence).
func diffLines(a, b []string) []diffLine {
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		return []diffLine{{Op: " ", Text: fmt.Sprintf("(schemas of %d and %d lines: too long to compare here)", len(a), len(b))}}
	}
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{" ", a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", a[i]})
			i++
		default:
			out = append(out, diffLine{"+", b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, diffLine{"-", a[i]})
	}
	for ; j < m; j++ {
		out = append(out, diffLine{"+", b[j]})
	}
	return out
}
