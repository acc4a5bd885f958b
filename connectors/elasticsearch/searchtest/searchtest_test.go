package searchtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func TestServersStartAndAnswer(t *testing.T) {
	for _, tc := range []struct {
		f       Flavor
		version string
		product bool // sends X-Elastic-Product: Elasticsearch
	}{
		{Elasticsearch7, "7.17.", true},
		{Elasticsearch8, "8.15.", true},
		{OpenSearch2, "2.19.", false},
	} {
		t.Run(string(tc.f), func(t *testing.T) {
			s := Shared(t, tc.f)
			if again := Shared(t, tc.f); again != s {
				t.Fatal("Shared started a second server")
			}
			body := s.MustDo(t, "GET", "/", nil)
			var info struct {
				Version struct {
					Number       string `json:"number"`
					Distribution string `json:"distribution"`
				} `json:"version"`
			}
			if err := json.Unmarshal(body, &info); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(info.Version.Number, tc.version) {
				t.Fatalf("version %q, want %s*", info.Version.Number, tc.version)
			}
			out, err := exec.Command("curl", "-sI", s.URL+"/").CombinedOutput()
			if err == nil {
				got := strings.Contains(strings.ToLower(string(out)), "x-elastic-product: elasticsearch")
				if got != tc.product {
					t.Fatalf("X-Elastic-Product present=%v, want %v:\n%s", got, tc.product, out)
				}
			}
			s.MustDo(t, "PUT", "/searchtest-smoke", []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0}}`))
			s.MustDo(t, "PUT", "/searchtest-smoke/_doc/1?refresh=true", []byte(`{"a":1}`))
			if b := s.MustDo(t, "GET", "/searchtest-smoke/_count", nil); !strings.Contains(string(b), `"count":1`) {
				t.Fatalf("count: %s", b)
			}
		})
	}
}

func TestDedicatedStopsWhenStdinCloses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	s := Dedicated(t, Elasticsearch7, map[string]string{"thread_pool.write.queue_size": "7"})
	b := s.MustDo(t, "GET", "/_nodes/settings?filter_path=**.thread_pool", nil)
	if !strings.Contains(string(b), `"queue_size":"7"`) {
		t.Fatalf("extra setting not applied: %s", b)
	}
	start := time.Now()
	s.stdin.Close() // what the kernel does when the test process dies
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("launcher still running 15s after its stdin closed")
	}
	t.Logf("stopped %v after stdin closed", time.Since(start).Round(time.Millisecond))
}
