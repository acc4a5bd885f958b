package pipelines_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/pipelines"
)

// TestClientConfigSecrets: the broker block's client_config takes Kafka's
// client property names with values from env() and file() (one trailing
// newline dropped); bad settings are errors naming the property and
// file:line without the secret; the decoded settings print no secret.
func TestClientConfigSecrets(t *testing.T) {
	const secret = "Pa55-w0rd-from-env-42"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "password.txt"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WEIR_TEST_SASL_PASSWORD", secret)
	load := func(body string) (*pipelines.Config, string) {
		name := filepath.Join(dir, "p.hcl")
		cfg, diags := pipelines.LoadSources([]pipelines.SourceFile{{Name: name, Src: []byte(body)}}, dir, pipelines.Options{})
		var sb strings.Builder
		for _, d := range diags {
			fmt.Fprintf(&sb, "%s: %s: %s\n", d.Subject, d.Summary, d.Detail)
		}
		return cfg, sb.String()
	}
	for _, src := range []string{`env("WEIR_TEST_SASL_PASSWORD")`, `file("password.txt")`} {
		cfg, diags := load(`broker {
  brokers = ["kafka-1:9093"]
  client_config = {
    "security.protocol" = "SASL_SSL"
    "sasl.mechanism"    = "SCRAM-SHA-512"
    "sasl.username"     = "weir"
    "sasl.password"     = ` + src + `
  }
}
`)
		if diags != "" {
			t.Fatalf("%s: %s", src, diags)
		}
		sec := cfg.Broker.Client.Security
		if sec.Protocol != "SASL_SSL" || sec.SASL.Mechanism != "SCRAM-SHA-512" || string(sec.SASL.Password) != secret {
			t.Errorf("%s: settings %+v", src, sec)
		}
		if printed := fmt.Sprintf("%v %+v %#v", cfg.Broker, cfg.Broker.Client, cfg.Broker.ClientConfig); strings.Contains(printed, secret) {
			t.Errorf("%s: secret printed: %s", src, printed)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`"security.protocol" = "SASL_SSL", "sasl.mechanism" = "GSSAPI", "sasl.password" = env("WEIR_TEST_SASL_PASSWORD")`, "sasl.mechanism"},
		{`"sasl.password" = env("WEIR_TEST_SASL_PASSWORD"), "sasl.mechanism" = "PLAIN", "sasl.username" = "u"`, "security.protocol"},
		{`"security.protocol" = "SSL", "ssl.truststore.location" = file("missing.pem")`, "broker.client_config"},
		{`"security.protocol" = "SSL", "ssl.key.password" = env("WEIR_TEST_UNSET_VARIABLE")`, "WEIR_TEST_UNSET_VARIABLE is not set"},
		{`"security.protocol" = "SSL", "linger.ms" = 5`, "linger.ms"},
	} {
		_, diags := load("broker {\n  brokers = [\"k:9093\"]\n  client_config = { " + c.body + " }\n}\n")
		if !strings.Contains(diags, c.want) || !strings.Contains(diags, "p.hcl:3") || strings.Contains(diags, secret) {
			t.Errorf("%s: diagnostics %q, want one at p.hcl:3 naming %s without the secret", c.body, diags, c.want)
		}
	}
	_, diags := load("broker {\n  client_config = { \"security.protocol\" = \"SSL\" }\n}\n")
	if !strings.Contains(diags, "client_config sets security.protocol") || !strings.Contains(diags, "embedded") {
		t.Errorf("client_config with the embedded broker: %q", diags)
	}
}

// TestEmbeddedRegistryConfig: the embedded broker block takes the
// registry's settings (registry_config, --registry-config's names) and,
// in client_config, the registry client's; secrets print redacted and
// bad settings are errors naming them.
func TestEmbeddedRegistryConfig(t *testing.T) {
	const secret = "Reg-Pa55-91"
	t.Setenv("WEIR_TEST_REGISTRY_USER_INFO", "weir:"+secret)
	dir := t.TempDir()
	load := func(body string) (*pipelines.Config, string) {
		cfg, diags := pipelines.LoadSources([]pipelines.SourceFile{{Name: filepath.Join(dir, "p.hcl"), Src: []byte(body)}}, dir, pipelines.Options{})
		var sb strings.Builder
		for _, d := range diags {
			fmt.Fprintf(&sb, "%s: %s: %s\n", d.Subject, d.Summary, d.Detail)
		}
		return cfg, sb.String()
	}
	cfg, diags := load(`broker {
  registry_config = {
    listeners               = "https://127.0.0.1:0"
    "ssl.keystore.location" = "server.pem"
    "ssl.key.password"      = env("WEIR_TEST_REGISTRY_USER_INFO")
    "authentication.method" = "BASIC"
  }
  client_config = {
    "schema.registry.ssl.truststore.location" = "ca.pem"
    "basic.auth.user.info"                    = env("WEIR_TEST_REGISTRY_USER_INFO")
  }
}
`)
	if diags != "" {
		t.Fatal(diags)
	}
	b := cfg.Broker
	if b.RegistryAddr != "" || b.RegistryConfigs()["listeners"] != "https://127.0.0.1:0" || b.RegistryConfigs()["ssl.key.password"] != "weir:"+secret {
		t.Errorf("registry settings: addr %q, %d configs", b.RegistryAddr, len(b.RegistryConfigs()))
	}
	if r := b.Client.Registry; r.User != "weir" || string(r.Password) != secret || r.CAFile != "ca.pem" {
		t.Errorf("registry client settings: %+v", r)
	}
	if printed := fmt.Sprintf("%v %+v %#v %v", b, b.Client, b.ClientConfig, b.RegistryConfig); strings.Contains(printed, secret) {
		t.Errorf("secret printed: %s", printed)
	}
	for _, c := range []struct{ body, want string }{
		{`registry_config = { "ssl.keystore.loc" = "x" }`, "ssl.keystore.loc"},
		{"registry_addr = \"127.0.0.1:0\"\n  registry_config = { listeners = \"https://127.0.0.1:0\" }", "replaces registry_addr"},
		{`brokers = ["k:9093"]` + "\n  registry_config = { listeners = \"https://127.0.0.1:0\" }", "registry_config"},
		{`client_config = { "basic.auth.user.info" = "nocolon" }`, "basic.auth.user.info"},
	} {
		if _, diags := load("broker {\n  " + c.body + "\n}\n"); !strings.Contains(diags, c.want) || !strings.Contains(diags, "p.hcl:") {
			t.Errorf("%s: diagnostics %q, want one naming %s", c.body, diags, c.want)
		}
	}
}
