package eostest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testkit"
)

// createTopics creates the topics (partitions each, the broker's default
// replication factor), retrying while the cluster answers with retriable
// errors or INVALID_REPLICATION_FACTOR (on a fresh cluster, until every
// broker has registered); a topic that exists already is fine.
func createTopics(t testing.TB, cl *kgo.Client, partitions int32, topics ...string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	testkit.CheckFor(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		rs, err := adm.CreateTopics(ctx, partitions, -1, nil, topics...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
				if !kerr.IsRetriable(r.Err) && !errors.Is(r.Err, kerr.InvalidReplicationFactor) {
					return testkit.Stop(fmt.Errorf("creating %s: %w", r.Topic, r.Err))
				}
				return fmt.Errorf("creating %s: %w", r.Topic, r.Err)
			}
		}
		return nil
	})
}
