package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/httpsec"
	"weir/broker/node"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/srclient"
	"weir/internal/testkit"
)

// TestSchemaCommandsHTTPSBasicAuth: the schema commands reach an https
// registry with basic auth, from flags, from the WEIR_REGISTRY_*
// variables and from the URL's user info; a password never shows in
// their errors.
func TestSchemaCommandsHTTPSBasicAuth(t *testing.T) {
	b := startWeirBroker(t, 1)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cli CA")
	keystore := tlstest.Write(t, dir, "server.pem", ca.Issue(t, tlstest.Leaf{}).KeyStore())
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	users := tlstest.Write(t, dir, "users", []byte("writer: w-pass,developer\nreader: r-pass,reader\n"))
	st, err := httpsec.ParseRegistry("https://127.0.0.1:0", map[string]string{
		"ssl.keystore.location": keystore, "authentication.method": "BASIC",
		"authentication.users.file": users, "auth.restricted.roles": "reader",
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, addr, err := node.ServeRegistrySecure(zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel)), st, b, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
	reg := "https://" + node.Dialable(addr)
	v1 := writeFile(t, "v1.avsc", cliUserV1)

	// Flags.
	testkit.CheckFor(t, 30*time.Second, func() error {
		_, _, err := runWeir(t, "", "schema", "list", "--registry", reg, "--registry-ca-file", caFile, "--registry-user-info", "writer:w-pass")
		return err
	})
	out := mustWeir(t, "", "schema", "register", "users-value", "--file", v1, "--registry", reg,
		"--registry-ca-file", caFile, "--registry-user-info", "writer:w-pass")
	if !strings.Contains(out, "id 1") {
		t.Fatalf("register: %q", out)
	}
	// The environment: a read-only user reads but may not register.
	t.Setenv(srclient.EnvURL, reg)
	t.Setenv(srclient.EnvCAFile, caFile)
	t.Setenv(srclient.EnvUserInfo, "reader:r-pass")
	if out := mustWeir(t, "", "schema", "get", "1"); !strings.Contains(out, `"User"`) {
		t.Fatalf("get as reader: %q", out)
	}
	out, _, err = runWeir(t, "", "schema", "register", "other-value", "--file", v1)
	if err == nil || !strings.Contains(err.Error(), "40301") {
		t.Fatalf("register as reader: %v %q", err, out)
	}
	// User info in the URL (Confluent's basic.auth.credentials.source=URL).
	t.Setenv(srclient.EnvUserInfo, "")
	mustWeir(t, "", "schema", "list", "--registry", strings.Replace(reg, "https://", "https://writer:w-pass@", 1))
	_, _, err = runWeir(t, "", "schema", "list", "--registry", strings.Replace(reg, "https://", "https://writer:Wr0ngPass@", 1))
	if err == nil || !strings.Contains(err.Error(), "40101") || strings.Contains(err.Error(), "Wr0ngPass") {
		t.Fatalf("wrong password in the URL: %v", err)
	}
	// Without the CA the registry's certificate is not trusted.
	t.Setenv(srclient.EnvCAFile, "")
	_, _, err = runWeir(t, "", "schema", "list", "--registry-user-info", "writer:w-pass")
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("no CA: %v", err)
	}
}
