package kafka

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"weir/broker/quota"
)

// TestUserQuotaSASL: a user quota applies to the user a SASL client
// authenticated as (User:admin over PLAIN), not to anonymous clients.
func TestUserQuotaSASL(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, saslConfigs(), withBrokerConfig(t, quotaWindows))
	createTopic(t, b.testBroker, "sq", 1, nil)
	setQuota(t, b.client(), quota.ProducerByteRate, 20000, false, "user", "admin")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	val := bytes.Repeat([]byte{'s'}, 30000) // over 20 kB/s at once
	admin, anon := newRateMeter(), newRateMeter()
	admincl := b.saslClient(t, "SASL_PLAINTEXT", kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()),
		kgo.WithHooks(admin), kgo.ProducerBatchCompression(kgo.NoCompression()))
	pcl := b.client(kgo.WithHooks(anon), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for range 2 {
		for _, cl := range []*kgo.Client{admincl, pcl} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sq", Value: val}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if admin.throttles.Load() == 0 {
		t.Error("User:admin over its producer_byte_rate was not throttled")
	}
	if anon.throttles.Load() != 0 {
		t.Error("User:ANONYMOUS throttled by User:admin's quota")
	}
}
