package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/tlsconf/tlstest"
	"weir/internal/srclient"
	"weir/internal/weirbin"
)

// TestRunAvroEmbeddedRegistryHTTPSBasicAuth: `weir run` starts its
// embedded registry over https with basic auth (registry_config, the
// names of `weir broker --registry-config`) and reaches it with the
// broker block's client_config (a private CA, basic.auth.user.info from
// env()): the file source registers its Avro schema and encodes through
// it, the file sink decodes the records through it. The registry asks
// for the password (401 without it) and the password appears in no
// output (weir validate, weir graph, weir run's debug logs).
func TestRunAvroEmbeddedRegistryHTTPSBasicAuth(t *testing.T) {
	bin := weirbin.Build(t)
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "registry CA")
	keystore := tlstest.Write(t, dir, "registry.pem", ca.Issue(t, tlstest.Leaf{}).KeyStore())
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	const pass = "reg-Pa55-secret-7731"
	users := tlstest.Write(t, dir, "users", []byte("weir: "+pass+",developer\n"))
	in := filepath.Join(dir, "in")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	pipeline := tlstest.Write(t, dir, "pipeline.hcl", []byte(fmt.Sprintf(`
broker {
  data_dir   = %q
  kafka_addr = "127.0.0.1:0"
  registry_config = {
    listeners                   = "https://127.0.0.1:0"
    "ssl.keystore.location"     = %q
    "authentication.method"     = "BASIC"
    "authentication.users.file" = %q
  }
  client_config = {
    "schema.registry.ssl.truststore.location" = %q
    "basic.auth.user.info"                    = env("WEIR_TEST_REGISTRY_USER_INFO")
  }
}

topic "lines" {
  partitions = 1
}

# Avro (the file source's default encoding): schema registered as lines-value
source "file" "in" {
  topic   = topic.lines
  include = [%q]
}

sink "file" "out" {
  from   = [topic.lines]
  path   = %q
  format = "json"
}
`, filepath.Join(dir, "data"), keystore, users, caFile, filepath.Join(in, "*.log"), out)))
	t.Setenv("WEIR_TEST_REGISTRY_USER_INFO", "weir:"+pass)

	var printed strings.Builder
	for _, args := range [][]string{{"validate", pipeline}, {"graph", pipeline}} {
		o, err := exec.Command(bin, args...).CombinedOutput()
		printed.Write(o)
		if err != nil {
			t.Fatalf("weir %v: %v\n%s", args, err, o)
		}
	}
	if err := os.WriteFile(filepath.Join(in, "app.log"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startWeir(t, nil, bin, "run", pipeline, "--log-format", "json", "--log-level", "debug", "--status", "on")
	p.waitLines(t, out, 3, 60*time.Second)
	// The sink decoded the Avro records through the registry.
	for i, m := range readJSONLines(t, out) {
		if want := []string{"one", "two", "three"}[i]; m["message"] != want {
			t.Errorf("record %d decoded as %v, want message %q", i, m, want)
		}
	}
	m := regexp.MustCompile(`"schema_registry": ?"(https://[^"]+)"`).FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("weir run logged no https registry URL:\n%s", p.stderr.String())
	}
	// The registry holds the source's schema, and wants the password.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := srclient.New(srclient.Options{URLs: m[1], CAFile: caFile, UserInfo: "weir:" + pass})
	if err != nil {
		t.Fatal(err)
	}
	if subs, err := cl.Subjects(ctx); err != nil || !strings.Contains(strings.Join(subs, ","), "lines-value") {
		t.Errorf("subjects %v, %v: want lines-value", subs, err)
	}
	anon, err := srclient.New(srclient.Options{URLs: m[1], CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	var re *sr.ResponseError
	if _, err := anon.Subjects(ctx); !errors.As(err, &re) || re.StatusCode != 401 {
		t.Errorf("subjects without credentials: %v, want 401", err)
	}
	p.interrupt(t)
	printed.WriteString(p.stdout.String() + p.stderr.String())
	if strings.Contains(printed.String(), pass) {
		t.Errorf("the registry password was printed:\n%s", printed.String())
	}
}
