package mysql

import (
	"errors"
	"strings"
	"testing"

	"weir/connectors"
)

// TestSchemaRegistryConfig: the source's schema_registry_config reaches
// its Avro encoder's registry client (kafkaclient.OpenRegistry): a
// setting it holds is read (a missing CA file is an error naming it) and
// the error holds no password.
func TestSchemaRegistryConfig(t *testing.T) {
	const secret = "My-Reg-Secret-2"
	raw := map[string]any{"user": "weir", "server_name": "db", "format": "avro", "schema_registry_url": "https://127.0.0.1:1",
		"schema_registry_config": map[string]any{"basic.auth.user.info": "u:" + secret, "schema.registry.ssl.truststore.location": "/nonexistent/ca.pem"}}
	dec, err := Kind.Spec.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configFrom("db", dec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newAvroEncoder(cfg.ServerName, cfg.RegistryURL, cfg.RegistryConfig)
	if err == nil || !errors.Is(err, connectors.ErrConfig) || !strings.Contains(err.Error(), "CA file") || strings.Contains(err.Error(), secret) {
		t.Errorf("avro encoder with a missing registry CA file: %v", err)
	}
}
