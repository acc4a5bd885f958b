package kafkaclient

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSplitBrokers(t *testing.T) {
	got, err := SplitBrokers(" a:1, b:2 ,,c:3")
	if err != nil || !slices.Equal(got, []string{"a:1", "b:2", "c:3"}) {
		t.Fatalf("SplitBrokers = %v, %v", got, err)
	}
	if _, err := SplitBrokers(" , "); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty list: err = %v, want ErrInvalid", err)
	}
}

func TestBrokersDefault(t *testing.T) {
	t.Setenv(BrokersEnv, "")
	if BrokersDefault() != DefaultBrokers {
		t.Fatalf("default = %q", BrokersDefault())
	}
	t.Setenv(BrokersEnv, "h1:9092,h2:9092")
	if BrokersDefault() != "h1:9092,h2:9092" {
		t.Fatalf("env default = %q", BrokersDefault())
	}
}

func TestParseAcks(t *testing.T) {
	for in, want := range map[string]Acks{"0": 0, "1": 1, "all": -1, "-1": -1, "ALL": -1} {
		got, err := ParseAcks(in)
		if err != nil || got != want {
			t.Errorf("ParseAcks(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseAcks("2"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseAcks(2) err = %v", err)
	}
	if Acks(-1).String() != "all" || Acks(1).String() != "1" {
		t.Error("Acks.String")
	}
}

func TestParseCompression(t *testing.T) {
	for _, s := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := ParseCompression(s); err != nil {
			t.Errorf("ParseCompression(%q): %v", s, err)
		}
	}
	if _, err := ParseCompression("brotli"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseCompression(brotli) err = %v", err)
	}
}

// TestOpenRegistry: the Avro connectors' registry settings
// (schema_registry_config) take the registry client properties only;
// errors name the property, never the password.
func TestOpenRegistry(t *testing.T) {
	const secret = "0pen-Reg-Secret"
	props := map[string]string{"basic.auth.user.info": "u:" + secret, "schema.registry.ssl.truststore.location": "/nonexistent/ca.pem", "linger.ms": "5"}
	if got := RegistryProperties(props); len(got) != 2 || got["linger.ms"] != "" {
		t.Errorf("RegistryProperties: %v", got)
	}
	_, err := OpenRegistry("https://127.0.0.1:1", props)
	if err == nil || !strings.Contains(err.Error(), "linger.ms") || strings.Contains(err.Error(), secret) {
		t.Errorf("unknown property: %v", err)
	}
	delete(props, "linger.ms")
	_, err = OpenRegistry("https://127.0.0.1:1", props)
	if err == nil || !strings.Contains(err.Error(), "CA file") || strings.Contains(err.Error(), secret) {
		t.Errorf("missing CA file: %v", err)
	}
	if _, err := OpenRegistry("http://127.0.0.1:1", nil); err != nil {
		t.Errorf("no settings: %v", err)
	}
}
