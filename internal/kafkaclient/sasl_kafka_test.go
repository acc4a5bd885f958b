package kafkaclient_test

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkaclient"
	"weir/internal/kafkapeer"
	"weir/internal/pemfile"
)

// TestSASLToApacheKafka: clients built from Kafka client properties
// authenticate to a real Apache Kafka 4.4 over SASL_SSL with
// SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, produce and consume; a wrong
// password or an unknown user fails with Kafka's SASL_AUTHENTICATION_FAILED
// quickly, without the password in the error.
func TestSASLToApacheKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka: not run with -short")
	}
	if why := kafkapeer.Available(); why != "" {
		t.Fatal(why)
	}
	t.Parallel()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "kafka peer CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "kafka"}})
	caFile := tlstest.Write(t, dir, "ca.pem", ca.PEM)
	const scramPass, plainPass = "scram-Secr3t-pass", "plain-Secr3t-pass"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := kafkapeer.Start(ctx, kafkapeer.Options{Dir: dir, KeyStore: tlstest.Write(t, dir, "kafka.pem", srv.KeyStore()),
		SCRAM: map[string]string{"weir": scramPass}, PLAIN: map[string]string{"plainuser": plainPass}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)

	props := func(mech, user, pass string) map[string]string {
		return map[string]string{"bootstrap.servers": k.SASLSSL, "security.protocol": "SASL_SSL", "sasl.mechanism": mech,
			"sasl.username": user, "sasl.password": pass, "ssl.truststore.type": "PEM", "ssl.truststore.location": caFile}
	}
	options := func(t *testing.T, p map[string]string) kafkaclient.Options {
		set, _, err := kafkaclient.ParseProperties(p)
		if err != nil {
			t.Fatal(err)
		}
		return set.Options(kafkaclient.Options{RetryTimeout: 20 * time.Second})
	}
	// The first client waits out the broker's start (metadata, offsets topic).
	o := options(t, props("SCRAM-SHA-512", "weir", scramPass))
	adm, err := kafkaclient.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	var created bool
	for !created {
		resp, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, nil, "over-sasl")
		switch {
		case err == nil && resp.Err == nil, errors.Is(resp.Err, kerr.TopicAlreadyExists):
			created = true
		case ctx.Err() != nil:
			t.Fatalf("create topic over SASL_SSL: %v %v\n%s", err, resp.Err, k.Log())
		default:
			time.Sleep(200 * time.Millisecond)
		}
	}
	for _, c := range []struct{ mech, user, pass string }{
		{"SCRAM-SHA-512", "weir", scramPass},
		{"SCRAM-SHA-256", "weir", scramPass},
		{"PLAIN", "plainuser", plainPass},
	} {
		t.Run(c.mech, func(t *testing.T) {
			cl, err := kafkaclient.New(options(t, props(c.mech, c.user, c.pass)), kgo.ConsumeTopics("over-sasl"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			val := "via " + c.mech
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "over-sasl", Value: []byte(val)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			for seen := false; !seen; {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume: %v", err)
				}
				fs.EachRecord(func(r *kgo.Record) { seen = seen || string(r.Value) == val })
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct{ mech, user, pass string }{
			{"SCRAM-SHA-512", "weir", "not-" + scramPass},
			{"SCRAM-SHA-512", "nobody", scramPass},
			{"PLAIN", "plainuser", "not-" + plainPass},
		} {
			o := options(t, props(c.mech, c.user, c.pass))
			o.RetryTimeout = 5 * time.Second
			start := time.Now()
			err := ping(t, o)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || strings.Contains(fmt.Sprint(err), c.pass) {
				t.Errorf("%s %s: err = %v, want SASL_AUTHENTICATION_FAILED without the password", c.mech, c.user, err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s %s: failing took %v", c.mech, c.user, d)
			}
		}
		// TLS still checks the broker: another CA is refused.
		o := options(t, props("SCRAM-SHA-512", "weir", scramPass))
		o.Security.TLS = pemfile.Client{CAFile: tlstest.Write(t, dir, "other.pem", tlstest.NewCA(t, "other").PEM)}
		if err := ping(t, o); err == nil {
			t.Error("connected to a broker whose CA is not trusted")
		}
	})
}
