package main

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// TestRunConsoleUsesPipelineClient: weir run against an external weir
// broker reached only over SASL_SSL (PLAIN, the password from env(), a
// private CA) serves a console whose Kafka client connects as the
// pipeline does: the topics page lists the pipeline's topic and the
// cluster page its broker, without --console-client-config. The
// password is in no output.
func TestRunConsoleUsesPipelineClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and weir run; skipped with -short")
	}
	bin := weirbin.Build(t)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "console CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	const password = "console-Sasl-Pa55-73"
	b := testbroker.Start(t, testbroker.Listeners("PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", map[string]string{
		"ssl.keystore.location":   tlstest.Write(t, dir, "broker.pem", srv.KeyStore()),
		"sasl.enabled.mechanisms": "PLAIN",
		"sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required user_pipelines="` + password + `";`,
	}))
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "app.log"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	pipeline := tlstest.Write(t, dir, "pipeline.hcl", []byte(fmt.Sprintf(`
broker {
  brokers = [%q]
  client_config = {
    "security.protocol"       = "SASL_SSL"
    "sasl.mechanism"          = "PLAIN"
    "sasl.username"           = "pipelines"
    "sasl.password"           = env("WEIR_TEST_SASL_PASSWORD")
    "ssl.truststore.location" = %q
  }
}

topic "console_events" {
  partitions = 2
}

source "file" "in" {
  topic    = topic.console_events
  include  = [%q]
  encoding = "json"
}

sink "file" "out" {
  from = [topic.console_events]
  path = %q
}
`, b.ListenerAddr("SASL_SSL"), caFile, filepath.Join(in, "*.log"), out)))
	p := startWeir(t, append(os.Environ(), "WEIR_TEST_SASL_PASSWORD="+password), bin, "run", pipeline,
		"--log-format", "json", "--admin-addr", "127.0.0.1:0")
	p.waitLines(t, out, 2, 60*time.Second)
	m := regexp.MustCompile(`"msg":"pipeline API listening".*"admin_addr":"([^"]+)"`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no admin listener in weir run's log:\n%s", p.stderr.String())
	}
	base := adminURL(m[1])
	get := func(path string) (int, string, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, c := range []struct{ path, want string }{
		{"/console/topics", "console_events"},
		{"/console/", b.ListenerAddr("SASL_SSL")[strings.LastIndexByte(b.ListenerAddr("SASL_SSL"), ':')+1:]},
	} {
		testkit.CheckFor(t, 30*time.Second, func() error {
			code, body, err := get(c.path)
			if err != nil {
				return err
			}
			if code != http.StatusOK || !strings.Contains(body, c.want) {
				return fmt.Errorf("GET %s: %d, want 200 showing %q:\n%s", c.path, code, c.want, body)
			}
			return nil
		})
	}
	p.interrupt(t)
	if all := p.stdout.String() + p.stderr.String(); strings.Contains(all, password) {
		t.Errorf("the SASL password was printed:\n%s", all)
	}
}

// TestConsolePipelinesPerEdge: the console's pipelines page of a
// running weir run shows each edge's own figures: a stream reading two
// topics, whose filter dead-letters the records of one of them, has its
// dead letters on that topic's edge only (graph and table), and a sink
// reading both topics has records flowing on both edges; no edge shows
// a component's total.
func TestConsolePipelinesPerEdge(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and weir run; skipped with -short")
	}
	bin := weirbin.Build(t)
	b := testbroker.Start(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	// 3 records of kind b without a tag (topic b; the stream
	// dead-letters them), then kind a records (topic a) appended while
	// the test looks.
	logFile := filepath.Join(in, "app.log")
	if err := os.WriteFile(logFile, []byte(`{"kind":"b","n":1}`+"\n"+`{"kind":"b","n":2}`+"\n"+`{"kind":"b","n":3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipeline := filepath.Join(dir, "pipeline.hcl")
	if err := os.WriteFile(pipeline, []byte(fmt.Sprintf(`
broker {
  brokers = [%q]
}

topic "a" {}
topic "b" {}
topic "kept" {}

source "file" "lines" {
  topic   = topic.a
  include = [%q]
  parse_json {
    field = "message"
  }
  route {
    topic     = topic.b
    condition = record.kind == "b"
  }
}

stream "check" {
  from = [topic.a, topic.b]
  to   = topic.kept
  filter {
    condition = lower(record.tag) != "x"
    on_error  = "dead_letter"
  }
}

sink "file" "both" {
  from = [topic.a, topic.b]
  path = %q
}
`, b.Addr, filepath.Join(in, "*.log"), filepath.Join(dir, "out.jsonl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startWeir(t, nil, bin, "run", pipeline, "--log-format", "json", "--admin-addr", "127.0.0.1:0")
	var base string
	testkit.CheckFor(t, 60*time.Second, func() error {
		m := regexp.MustCompile(`"msg":"pipeline API listening".*"console":"([^"]+)"`).FindStringSubmatch(p.stderr.String())
		if m == nil {
			return fmt.Errorf("no console URL in weir run's log yet:\n%s", p.stderr.String())
		}
		base = m[1]
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	appended := make(chan struct{})
	t.Cleanup(func() { cancel(); <-appended })
	go func() {
		defer close(appended)
		f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			fmt.Fprintf(f, `{"kind":"a","tag":"t","n":%d}`+"\n", i)
		}
	}()
	row := regexp.MustCompile(`<tr data-edge="([^"]+)"><td>[^<]*</td><td>[^<]*</td><td class="num" data-rate="edge">([^<]*)</td><td class="num[^"]*">([^<]*)</td><td class="num[^"]*">([^<]*)</td></tr>`)
	testkit.CheckFor(t, 60*time.Second, func() error {
		resp, err := http.Get(base + "pipelines")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET pipelines: %d\n%s", resp.StatusCode, body)
		}
		edges := map[string][3]string{} // rate, errors, dead letters
		for _, m := range row.FindAllStringSubmatch(string(body), -1) {
			edges[m[1]] = [3]string{m[2], m[3], m[4]}
		}
		var bad []string
		for e, want := range map[string]string{"topic.a stream.check": "0", "topic.b stream.check": "3", "topic.a sink.both": "0", "topic.b sink.both": "0"} {
			if got, ok := edges[e]; !ok || got[2] != want {
				bad = append(bad, fmt.Sprintf("%s: %v, want %s dead letters", e, got, want))
			}
		}
		if r := edges["topic.a sink.both"][0]; r == "" || r == "0/s" {
			bad = append(bad, fmt.Sprintf("topic.a → sink.both: rate %q, want records flowing", r))
		}
		if strings.Contains(string(body), "component total") || strings.Count(string(body), "3 DLQ") != 1 {
			bad = append(bad, "the graph shows a component total or the dead letters on more than one edge")
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s\nedges %v", strings.Join(bad, "\n"), edges)
		}
		return nil
	})
}
