package admin

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/broker/httpsec"
)

// TestMetricsOpenOrAuthenticated: with basic auth on, /metrics and the
// health checks are open when authentication.skip.paths lists them and
// need credentials when it does not; the profiler always does.
func TestMetricsOpenOrAuthenticated(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("prom: scrape-pass,metrics\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		skip string
		open bool
	}{{"/metrics,/healthz,/readyz", true}, {"", false}} {
		st, err := httpsec.ParseAdmin("127.0.0.1:0", map[string]string{
			httpsec.AdminPrefix + httpsec.AuthenticationMethod:    "BASIC",
			httpsec.AdminPrefix + httpsec.AuthenticationUsersFile: users,
			httpsec.AdminPrefix + httpsec.AuthenticationSkipPaths: c.skip,
		})
		if err != nil {
			t.Fatal(err)
		}
		sec, err := httpsec.New(st, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := startServer(t, Config{Addr: st.Addr, Security: sec})
		base := "http://" + s.Addr()
		for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
			code, body := get(t, base+p)
			if c.open && code != 200 || !c.open && (code != 401 || !strings.Contains(body, `"error_code":40101`)) {
				t.Fatalf("skip.paths=%q: GET %s without credentials: %d %s", c.skip, p, code, body)
			}
			req, _ := http.NewRequest("GET", base+p, nil)
			req.SetBasicAuth("prom", "scrape-pass")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("skip.paths=%q: GET %s with credentials: %d", c.skip, p, resp.StatusCode)
			}
		}
		resp, err := http.Get(base + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic realm=") {
			t.Fatalf("pprof without credentials: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
}
