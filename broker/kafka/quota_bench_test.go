package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/metadata"
	"weir/broker/quota"
)

// BenchmarkQuotaProduce: the produce rate of a broker without client
// quotas and of one whose quotas apply to the producer but are not
// reached (producer_byte_rate, consumer_byte_rate and request_percentage
// on <default> user, a client-id quota and a user + client-id one, so
// every request is measured and resolved through the precedence order),
// 100-byte records, acks=1, 8 partitions, a fresh broker per run.
//
//	for i in 1 2 3 4 5; do go test ./broker/kafka -run '^$' -bench 'BenchmarkQuotaProduce' -benchtime 1000000x -count 1; done
func BenchmarkQuotaProduce(b *testing.B) {
	for _, quotas := range []bool{false, true} {
		name := "no-quotas"
		if quotas {
			name = "quotas-not-reached"
		}
		b.Run(name, func(b *testing.B) {
			br := startBroker(b)
			if quotas {
				other, client := "other", "bench-client"
				if err := br.meta.AlterClientQuotas(context.Background(), []metadata.ClientQuota{
					{Entity: []metadata.QuotaEntityPart{{Type: quota.EntityUser}}, Key: quota.ProducerByteRate, Value: 1e12},
					{Entity: []metadata.QuotaEntityPart{{Type: quota.EntityUser}}, Key: quota.ConsumerByteRate, Value: 1e12},
					{Entity: []metadata.QuotaEntityPart{{Type: quota.EntityUser}}, Key: quota.RequestPercentage, Value: 1e6},
					{Entity: []metadata.QuotaEntityPart{{Type: quota.EntityClientID, Name: &client}}, Key: quota.ProducerByteRate, Value: 1e12},
					{Entity: []metadata.QuotaEntityPart{{Type: quota.EntityUser, Name: &other}, {Type: quota.EntityClientID}}, Key: quota.ProducerByteRate, Value: 1},
				}); err != nil {
					b.Fatal(err)
				}
				if !br.srv.quotas.Produce.Enabled() || !br.srv.quotas.Request.Enabled() {
					b.Fatal("quotas not in force")
				}
			}
			createTopic(b, br, "quotabench", 8, nil)
			produce100B(b, br, "quotabench", kgo.ClientID("bench-client"))
			if quotas {
				if n := counterValue(br.srv.metrics.throttled.WithLabelValues(quota.ProducerByteRate)) + counterValue(br.srv.metrics.throttled.WithLabelValues(quota.RequestPercentage)); n != 0 {
					b.Fatalf("%v responses throttled: the quotas were reached", n)
				}
			}
		})
	}
}
