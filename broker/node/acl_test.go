package node

import (
	"context"
	"strings"
	"testing"
)

// TestAuthorizerConfig: authorizer.class.name names Kafka's authorizer
// or the broker does not start, saying which classes it takes; super.users
// entries must be principals.
func TestAuthorizerConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"authorizer.class.name": "com.example.RangerAuthorizer"},
			"authorizer.class.name=com.example.RangerAuthorizer: weir implements only org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
		{map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "admin"},
			`super.users: invalid principal "admin"`},
		{map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "allow.everyone.if.no.acl.found": "yes"},
			"allow.everyone.if.no.acl.found"},
	} {
		_, err := Start(context.Background(), Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", AdminAddr: "off", RegistryAddr: "off", BrokerConfigs: c.cfg})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
	n := startNode(t, Config{DataDir: t.TempDir(), KafkaAddr: "127.0.0.1:0", AdminAddr: "off", RegistryAddr: "off", BrokerConfigs: map[string]string{
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}})
	if n.KafkaAddr() == "" {
		t.Fatal("no Kafka address")
	}
}
