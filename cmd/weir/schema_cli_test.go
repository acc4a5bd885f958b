package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/node"
	"weir/internal/testkit"
)

// startTestRegistry serves weir's registry (as weir broker does) for the
// broker at kafkaAddr and returns its URL once it answers.
func startTestRegistry(t *testing.T, kafkaAddr string) string {
	t.Helper()
	stop, addr, err := node.ServeRegistry(zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), "127.0.0.1:0", kafkaAddr, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
	url := "http://" + addr
	testkit.CheckFor(t, 30*time.Second, func() error {
		resp, err := http.Get(url + "/subjects")
		if err != nil {
			return fmt.Errorf("registry at %s: %w", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("registry at %s: %s", url, resp.Status)
		}
		return nil
	})
	return url
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	cliUserV1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	cliUserV2 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},
	  {"name":"email","type":["null","string"],"default":null},{"name":"tier","type":"string","default":"free"}]}`
	cliUserBad = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"age","type":"int"}]}`
)

func TestSchemaCommands(t *testing.T) {
	b := startWeirBroker(t, 1)
	reg := startTestRegistry(t, b)
	v1 := writeFile(t, "v1.avsc", cliUserV1)
	v2 := writeFile(t, "v2.avsc", cliUserV2)
	bad := writeFile(t, "bad.avsc", cliUserBad)

	out := mustWeir(t, "", "schema", "register", "users-value", "--file", v1, "--registry", reg)
	if !strings.Contains(out, "subject users-value version 1 id 1") {
		t.Fatalf("register: %q", out)
	}
	out = mustWeir(t, "", "schema", "check", "users-value", "--file", v2, "--registry", reg)
	if strings.TrimSpace(out) != "compatible" {
		t.Fatalf("check v2: %q", out)
	}
	out, _, err := runWeir(t, "", "schema", "check", "users-value", "--file", bad, "--registry", reg)
	if err == nil || !strings.Contains(out, "READER_FIELD_MISSING_DEFAULT_VALUE") || !strings.Contains(out, "'age'") {
		t.Fatalf("check bad: %q, %v", out, err)
	}
	_, _, err = runWeir(t, "", "schema", "register", "users-value", "--file", bad, "--registry", reg)
	if err == nil || !strings.Contains(err.Error(), "incompatible") || !strings.Contains(err.Error(), "error 409") {
		t.Fatalf("register bad: %v", err)
	}
	mustWeir(t, "", "schema", "register", "users-value", "--file", v2, "--registry", reg)
	out = mustWeir(t, "", "schema", "get", "users-value", "--registry", reg)
	if !strings.Contains(out, `"version": 2`) || !strings.Contains(out, `"id": 2`) || !strings.Contains(out, `"tier"`) {
		t.Fatalf("get latest: %q", out)
	}
	out = mustWeir(t, "", "schema", "get", "1", "--raw", "--registry", reg)
	if strings.TrimSpace(out) != cliUserV1 {
		t.Fatalf("get 1: %q", out)
	}
	out = mustWeir(t, "", "schema", "list", "--registry", reg)
	if !regexpLine(out, `users-value\s+1,2\s+2`) {
		t.Fatalf("list: %q", out)
	}
	out = mustWeir(t, "", "schema", "config", "users-value", "--set", "full", "--registry", reg)
	if strings.TrimSpace(out) != "users-value FULL" {
		t.Fatalf("config set: %q", out)
	}
	out = mustWeir(t, "", "schema", "config", "--registry", reg)
	if strings.TrimSpace(out) != "(global) BACKWARD" {
		t.Fatalf("config global: %q", out)
	}
	if _, _, err := runWeir(t, "", "schema", "config", "--set", "SOMETIMES", "--registry", reg); err == nil || !strings.Contains(err.Error(), "invalid compatibility level") {
		t.Fatalf("bad level: %v", err)
	}
	out = mustWeir(t, "", "schema", "delete", "users-value", "--version", "1", "--registry", reg)
	if !strings.Contains(out, "deleted users-value version 1") {
		t.Fatalf("delete version: %q", out)
	}
	_, _, err = runWeir(t, "", "schema", "delete", "users-value", "--permanent", "--registry", reg)
	if err == nil || !strings.Contains(err.Error(), "40405") {
		t.Fatalf("permanent before soft: %v", err)
	}
	mustWeir(t, "", "schema", "delete", "users-value", "--registry", reg)
	mustWeir(t, "", "schema", "delete", "users-value", "--permanent", "--registry", reg)
	if _, _, err := runWeir(t, "", "schema", "get", "users-value", "--registry", reg); err == nil || !strings.Contains(err.Error(), "40401") {
		t.Fatalf("get deleted subject: %v", err)
	}
	_, _, err = runWeir(t, "", "schema", "list", "--registry", "http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "is a registry running") {
		t.Fatalf("unreachable registry: %v", err)
	}
}

func TestProduceConsumeAvro(t *testing.T) {
	b := startWeirBroker(t, 2)
	reg := startTestRegistry(t, b)
	v1 := writeFile(t, "v1.avsc", cliUserV1)
	v2 := writeFile(t, "v2.avsc", cliUserV2)

	in := ""
	for i := 0; i < 20; i++ {
		in += fmt.Sprintf(`{"id":%d,"name":"user%d"}`+"\n", i, i)
	}
	mustWeir(t, in, "produce", "users", "--brokers", b, "--registry", reg, "--value-schema", v1)
	// A bad line fails that line only, named by its number.
	_, errOut, err := runWeir(t, `{"id":1,"name":"ok"}`+"\n"+`{"id":"x"}`+"\n", "produce", "users", "--brokers", b, "--registry", reg, "--value-schema", v1)
	if err == nil || !strings.Contains(errOut, "line 2:") {
		t.Fatalf("bad Avro JSON line: %v %q", err, errOut)
	}

	out := mustWeir(t, "", "consume", "users", "--brokers", b, "--registry", reg, "--decode-avro", "-e", "--from-beginning", "--format", `%v\n`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 21 {
		t.Fatalf("decoded %d lines, want 21:\n%s", len(lines), out)
	}
	for i := 0; i < 20; i++ {
		if want := fmt.Sprintf(`{"id":%d,"name":"user%d"}`, i, i); !strings.Contains(out, want) {
			t.Fatalf("output lacks %s:\n%s", want, out)
		}
	}
	// With a newer reader schema, old records get its defaults.
	out = mustWeir(t, "", "consume", "users", "--brokers", b, "--registry", reg, "--value-schema", v2, "-e", "--from-beginning")
	if !strings.Contains(out, `{"id":3,"name":"user3","email":null,"tier":"free"}`) {
		t.Fatalf("resolved output:\n%s", out)
	}
}
