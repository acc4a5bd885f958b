package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/conformance"
	"weir/connectors/http"
)

// The http kind: each Write is one NDJSON request of events {"id":N}
// (answered once the broker has them); the large input is one event with
// a long field.
func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.TestSource(t, conformance.SourceDef{
		Kind: "http",
		Push: true,
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SourceCase {
			var srv *http.Server
			post := func(body string) int {
				resp, err := nethttp.Post("http://"+srv.Addr().String()+"/ingest", "application/x-ndjson", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			return &conformance.SourceCase{
				Config: map[string]any{"topic": name, "address": "127.0.0.1:0", "linger": "1ms"},
				Topic:  name,
				Opened: func(src connectors.Source) { srv = src.(*http.Source).Server() },
				Write: func(ids ...int) {
					var b bytes.Buffer
					for _, id := range ids {
						fmt.Fprintf(&b, "{\"id\":%d}\n", id)
					}
					if code := post(b.String()); code != nethttp.StatusOK {
						t.Fatalf("POST of %d events: %d", len(ids), code)
					}
				},
				WriteLarge: func(id, size int) {
					code := post(fmt.Sprintf("{\"id\":%d,\"pad\":%q}\n", id, strings.Repeat("x", size)))
					t.Logf("POST of an event the broker refuses: %d", code)
				},
				ID: func(r *kgo.Record) (int, error) {
					var ev struct{ ID *int }
					if err := json.Unmarshal(r.Value, &ev); err != nil || ev.ID == nil {
						return 0, fmt.Errorf("value %.100q: no id (%v)", r.Value, err)
					}
					return *ev.ID, nil
				},
			}
		},
		BadConfigs: []conformance.BadConfig{
			{Name: "address in use or invalid", Setting: "address", Change: func(c map[string]any) { c["address"] = "127.0.0.1:99999" }},
			{Name: "invalid topic", Setting: "topic", Change: func(c map[string]any) { c["topic"] = "bad topic!" }},
			{Name: "username without password", Setting: "password", Change: func(c map[string]any) { c["username"] = "u" }},
		},
	})
}
