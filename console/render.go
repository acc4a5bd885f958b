package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// view is what every page template gets: the layout's fields and the
// page's own Data.
type view struct {
	Title    string // <title> and <h1>
	Name     string // Config.Name
	Nav      []navItem
	ReadOnly bool
	Error    string // a loading error, shown in an alert
	Data     any
	Now      time.Time
}

type navItem struct {
	Label, Path string
	Current     bool
}

var funcs = template.FuncMap{
	"bytes": fmtBytes,
	"int":   func(v int64) string { return fmtInt(v) },
	"time":  func(t time.Time) string { return fmtTime(t) },
	"ms":    func(ms int64) string { return fmtTime(time.UnixMilli(ms)) },
	"esc":   url.PathEscape,
	"query": url.QueryEscape,
	"join":  func(s []int32) string { return joinInt32(s) },
	"contains": func(s []int32, v int32) bool {
		for _, x := range s {
			if x == v {
				return true
			}
		}
		return false
	},
}

// parseTemplates builds one template set per page: layout.html plus the
// page's file, which defines "content".
func (c *Console) parseTemplates() error {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return fmt.Errorf("console: layout template: %w", err)
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	c.pages = map[string]*template.Template{}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return fmt.Errorf("console: template %s: %w", f, err)
		}
		c.pages[name] = t
	}
	return nil
}

// render writes page name with data; a non-nil err is shown in an alert
// above whatever data there is, with status 502 (the cluster or the
// registry did not answer as asked).
func (c *Console) render(w http.ResponseWriter, r *http.Request, name, title string, data any, err error) {
	status := http.StatusOK
	v := view{Title: title, Name: c.cfg.Name, ReadOnly: c.cfg.ReadOnly, Data: data, Now: time.Now()}
	if err != nil {
		v.Error = err.Error()
		status = http.StatusBadGateway
		var se statusError
		if errors.As(err, &se) {
			status = se.status
		}
	}
	c.renderStatus(w, r, name, status, v)
}

// badRequest answers 400 with the page layout and msg.
func (c *Console) badRequest(w http.ResponseWriter, r *http.Request, title, msg string) {
	c.renderStatus(w, r, "message", http.StatusBadRequest, view{Title: title, Name: c.cfg.Name, ReadOnly: c.cfg.ReadOnly, Error: msg, Now: time.Now()})
}

// notFound answers 404 with the page layout and msg.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request, title, msg string) {
	c.renderStatus(w, r, "message", http.StatusNotFound, view{Title: title, Name: c.cfg.Name, ReadOnly: c.cfg.ReadOnly, Error: msg, Now: time.Now()})
}

func (c *Console) renderStatus(w http.ResponseWriter, r *http.Request, name string, status int, v view) {
	for _, n := range c.nav {
		cur := r.URL.Path == n.Path || n.Path != Prefix && strings.HasPrefix(r.URL.Path, n.Path)
		v.Nav = append(v.Nav, navItem{Label: n.Label, Path: n.Path, Current: cur})
	}
	t := c.pages[name]
	if t == nil {
		http.Error(w, "console: no template "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.lg.Sugar().Errorw("console: rendering", "page", name, "error", err)
		http.Error(w, "console: rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func fmtBytes(v int64) string {
	const unit = 1024
	if v < unit {
		return strconv.FormatInt(v, 10) + " B"
	}
	div, exp := int64(unit), 0
	for n := v / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(v)/float64(div), "KMGTPE"[exp])
}

// fmtInt groups thousands with a thin space.
func fmtInt(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(r)
	}
	return b.String()
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func joinInt32(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, ", ")
}
