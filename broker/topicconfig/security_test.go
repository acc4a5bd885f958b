package topicconfig

import (
	"errors"
	"strings"
	"testing"
)

// Listener and TLS settings are known broker configs; per-listener
// overrides are accepted; passwords and keys are described as sensitive,
// without their values, and not shown in errors.
func TestSecurityConfigs(t *testing.T) {
	b, err := NewBroker(map[string]string{
		"listeners":                                      "PLAINTEXT://:9092,SSL://:9094",
		"ssl.key.password":                               "hunter2",
		"listener.name.ssl.ssl.keystore.key":             "-----BEGIN PRIVATE KEY-----",
		"listener.name.ssl.ssl.client.auth":              "required",
		"listener.security.protocol.map":                 "PLAINTEXT:PLAINTEXT,SSL:SSL",
		"ssl.principal.mapping.rules":                    "DEFAULT",
		"listener.name.internal.ssl.truststore.location": "/etc/ca.pem",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Describe([]string{"ssl.key.password", "ssl.client.auth"}, true, false) {
		switch e.Name {
		case "ssl.key.password":
			if !e.Sensitive || e.Value != nil || len(e.Synonyms) == 0 || e.Synonyms[0].Value != nil {
				t.Errorf("ssl.key.password described as %+v", e)
			}
		case "ssl.client.auth":
			if e.Sensitive || e.Value == nil || *e.Value != "none" {
				t.Errorf("ssl.client.auth described as %+v", e)
			}
		}
	}
	if !Sensitive("listener.name.ssl.ssl.keystore.key") || Sensitive("listener.name.ssl.ssl.client.auth") {
		t.Error("Sensitive of listener overrides")
	}
	for name, v := range map[string]string{
		"listener.name.ssl.ssl.client.auth": "maybe",
		"listener.name.ssl.sasl.mechanism":  "PLAIN",
		"ssl.keystore.type":                 "JKS",
	} {
		_, err := NewBroker(map[string]string{name: v})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v", name, v, err)
		}
	}
	_, err = NewBroker(map[string]string{"listener.name.x.ssl.key.password": "s3cret", "ssl.keystore.certificate.chain": ""})
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Fatal(err)
	}
	if _, err := NewBroker(map[string]string{"listener.name.ssl.ssl.bogus": "x"}); !errors.Is(err, ErrUnknownConfig) {
		t.Errorf("unknown override: %v", err)
	}
}
