package topicconfig

import (
	"errors"
	"strings"
	"testing"
)

// TestAdminHTTPConfigs: the admin listener's authentication settings are
// known under listener.name.admin. only.
func TestAdminHTTPConfigs(t *testing.T) {
	if _, err := NewBroker(map[string]string{
		"listener.name.admin.authentication.method":     "BASIC",
		"listener.name.admin.authentication.users.file": "/etc/weir/users",
		"listener.name.admin.authentication.skip.paths": "/metrics,/healthz",
		"listener.name.admin.authentication.roles":      "ops",
		"listener.name.admin.auth.restricted.roles":     "viewer",
		"listener.name.admin.authentication.realm":      "weir",
		"listener.name.admin.ssl.keystore.location":     "/etc/weir/admin.pem",
	}); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"listener.name.ssl.authentication.method":  "BASIC",
		"authentication.method":                    "BASIC",
		"listener.name.admin.authentication.bogus": "x",
	} {
		if _, err := NewBroker(map[string]string{name: v}); !errors.Is(err, ErrUnknownConfig) {
			t.Errorf("%s: %v, want unknown config", name, err)
		}
	}
	_, err := NewBroker(map[string]string{"listener.name.admin.authentication.method": "DIGEST"})
	if err == nil || !strings.Contains(err.Error(), "listener.name.admin.authentication.method") {
		t.Errorf("DIGEST: %v", err)
	}
}
