package admin

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"weir/broker/httpsec"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
)

// TestPrometheusScrapesOverTLS: a real Prometheus (Debian's package,
// which scripts/test installs) scrapes /metrics over https with basic
// auth: its target is up; a second job with a wrong password is down.
func TestPrometheusScrapesOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("prometheus is not installed (scripts/test installs it)")
		}
		t.Skip("prometheus is not installed (apt-get install prometheus, or run scripts/test)")
	}
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "prom CA")
	keystore := tlstest.Write(t, dir, "server.pem", ca.Issue(t, tlstest.Leaf{}).KeyStore())
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	users := tlstest.Write(t, dir, "users", []byte("prom: scrape-Secret,metrics\n"))
	goodPass := tlstest.Write(t, dir, "good", []byte("scrape-Secret"))
	badPass := tlstest.Write(t, dir, "bad", []byte("not-it"))
	st, err := httpsec.ParseAdmin("https://127.0.0.1:0", map[string]string{
		"listener.name.admin.ssl.keystore.location":     keystore,
		"listener.name.admin.authentication.method":     "BASIC",
		"listener.name.admin.authentication.users.file": users,
	})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := httpsec.New(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sec.Close)
	s := startServer(t, Config{Addr: st.Addr, Security: sec})

	job := func(name, passFile string) string {
		return fmt.Sprintf(`- job_name: %s
  scheme: https
  basic_auth: {username: prom, password_file: %s}
  tls_config: {ca_file: %s}
  static_configs: [{targets: ['%s']}]
`, name, passFile, caFile, s.Addr())
	}
	cfg := tlstest.Write(t, dir, "prometheus.yml", []byte("global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n"+
		job("weir", goodPass)+job("weir_wrong_password", badPass)))
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address=127.0.0.1:0", "--log.level=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addrc := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`msg="Listening on" address=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
	}()
	var promAddr string
	select {
	case promAddr = <-addrc:
	case <-time.After(30 * time.Second):
		t.Fatal("prometheus did not say where it listens within 30s")
	}
	// up is 1 for the job with the right password, 0 for the other.
	testkit.CheckFor(t, 30*time.Second, func() error {
		resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=up")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return err
		}
		up := map[string]any{}
		for _, x := range r.Data.Result {
			up[x.Metric["job"]] = x.Value[1]
		}
		if up["weir"] != "1" || up["weir_wrong_password"] != "0" {
			return errors.New(fmt.Sprint("up: ", up))
		}
		return nil
	})
}
