package browsertest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// TestChecksCatchFaults: the kit's checks are not empty: a page with an
// unlabelled input, grey-on-white text and a fixed 900 px wide box fails
// the accessibility check (label, color-contrast) and, at 390 px, the
// overflow check; a clean page passes both; basic auth reaches the
// server from the tab's credentials; a screenshot is written.
func TestChecksCatchFaults(t *testing.T) {
	b := Shared(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><title>bad</title></head><body><main><h1>Bad</h1>
<p style="color:#bbb;background:#fff">low contrast text</p><input type="text">
<div style="width:900px">wide</div></main></body></html>`))
	})
	mux.HandleFunc("/good", func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "ann" || p != "pw" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><head><meta name="viewport" content="width=device-width, initial-scale=1"><title>good</title></head><body><main><h1>Good</h1>
<p>readable text</p><label>Name <input type="text"></label></main></body></html>`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tab := b.Tab(t, TabOptions{Width: 390, Height: 844, User: "ann", Password: "pw"})
	if st := tab.Go(srv.URL + "/bad"); st != 200 {
		t.Fatalf("/bad: status %d", st)
	}
	got := strings.Join(tab.A11yViolations(), "\n")
	for _, rule := range []string{"label", "color-contrast"} {
		if !strings.Contains(got, rule+" (") {
			t.Errorf("axe did not report %s on /bad; it reported:\n%s", rule, got)
		}
	}
	if over, culprit := tab.HorizontalOverflow(); over <= 0 || !strings.HasPrefix(culprit, "div") {
		t.Errorf("/bad at 390 px: overflow %d by %q, want > 0 by the div", over, culprit)
	}
	if st := tab.Go(srv.URL + "/good"); st != 200 {
		t.Fatalf("/good with the tab's credentials: status %d", st)
	}
	tab.CheckA11y("/good")
	tab.CheckNoHorizontalOverflow("/good")
	tab.Screenshot("good")
}
