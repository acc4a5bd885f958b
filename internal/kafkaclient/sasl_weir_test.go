package kafkaclient_test

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/broker/node"
	"weir/broker/sasl"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkaclient"
)

// TestSASLToWeirListener: the same client settings against weir's own
// SASL_SSL listener: SCRAM-SHA-512 (a credential given as
// --add-scram), SCRAM-SHA-256 and PLAIN (JAAS users) authenticate and
// produce; a wrong password gets SASL_AUTHENTICATION_FAILED.
func TestSASLToWeirListener(t *testing.T) {
	t.Parallel()
	dir := tlstest.Dir(t)
	ca := tlstest.NewCA(t, "weir SASL CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	const scramPass, plainPass = "weir-scram-Pa55", "weir-plain-Pa55"
	var users []sasl.ScramUser
	for _, m := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256"} {
		u, err := sasl.ParseAddScram(m + "=[name=weir,password=" + scramPass + "]")
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	b := testbroker.Start(t, testbroker.Listeners("PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", map[string]string{
		"ssl.keystore.location":   tlstest.Write(t, dir, "broker.pem", srv.KeyStore()),
		"sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
		"sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required user_plainuser="` + plainPass + `";`,
	}), func(c *node.Config) { c.AddScram = users })
	b.CreateTopic("weir-sasl", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct{ mech, user, pass string }{
		{"SCRAM-SHA-512", "weir", scramPass}, {"SCRAM-SHA-256", "weir", scramPass}, {"PLAIN", "plainuser", plainPass},
	} {
		set, _, err := kafkaclient.ParseProperties(map[string]string{"bootstrap.servers": b.ListenerAddr("SASL_SSL"),
			"security.protocol": "SASL_SSL", "sasl.mechanism": c.mech, "sasl.username": c.user, "sasl.password": c.pass,
			"ssl.truststore.location": caFile})
		if err != nil {
			t.Fatal(err)
		}
		o := set.Options(kafkaclient.Options{})
		cl, err := kafkaclient.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "weir-sasl", Value: []byte(c.mech)}).FirstErr(); err != nil {
			t.Errorf("%s: produce: %v", c.mech, err)
		}
		cl.Close()
		o.Security.SASL.Password = "not-" + o.Security.SASL.Password
		if err := ping(t, o); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s with a wrong password: err = %v, want SASL_AUTHENTICATION_FAILED", c.mech, err)
		}
	}
	if n := len(b.ReadAll("weir-sasl")); n != 3 {
		t.Errorf("%d records in weir-sasl, want 3", n)
	}
}
