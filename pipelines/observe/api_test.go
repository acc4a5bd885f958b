package observe

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestParseTap: the defaults and the parameters of a tap request.
func TestParseTap(t *testing.T) {
	g := Graph{Components: []Component{
		{ID: "source.raw", Type: "source"},
		{ID: "source.app", Type: "source", Steps: []string{"parse_json", "filter"}},
		{ID: "sink.out", Type: "sink"},
	}}
	for _, c := range []struct {
		comp, query, accept string
		want                string
	}{
		{"sink.out", "", "", "sink.out 0 in limit 0 rate 0 sse false"},
		{"source.app", "", "", "source.app 0 out limit 0 rate 0 sse false"},
		{"source.app", "direction=in&limit=5&rate=2/s", "", "source.app 0 in limit 5 rate 2 sse false"},
		{"source.app", "step=filter&direction=in", "text/event-stream", "source.app 2 in limit 0 rate 0 sse true"},
		{"source.app/1", "format=sse", "", "source.app 1 out limit 0 rate 0 sse true"},
		{"raw", "direction=in", "", "source.raw 0 out limit 0 rate 0 sse false"},
		{"sink.out", "direction=out", "", "the records of sink.out leave weir"},
		{"source.app", "format=xml", "", `format "xml"`},
		{"source.app", "limit=x", "", `limit "x"`},
	} {
		r := httptest.NewRequest("GET", "/api/v1/tap/"+c.comp+"?"+c.query, nil)
		r.SetPathValue("component", c.comp)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		tr, err := ParseTap(g, r)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = strings.Join([]string{tr.Component.ID, strconv.Itoa(tr.Step), tr.Direction, "limit", strconv.Itoa(tr.Options.Limit),
				"rate", strconv.Itoa(int(tr.Options.Rate)), "sse", map[bool]string{true: "true", false: "false"}[tr.SSE]}, " ")
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s?%s: %q, want %q", c.comp, c.query, got, c.want)
		}
	}
}
