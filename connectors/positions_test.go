package connectors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// deleteTopic deletes topic, waiting until it is gone from the metadata
// or listed under another topic id (created again).
func deleteTopic(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	r, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		t.Fatalf("deleting %s: %v", topic, err)
	}
	testbroker.CheckFor(t, 30*time.Second, func() error {
		// kadm answers ListTopics from kgo's metadata cache, which
		// keeps a deleted topic for MetadataMinAge (5 s).
		cl.PurgeTopicsFromClient(topic)
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		// Gone, or already created again (a running source recreates
		// its offsets topic): another topic id.
		if d, ok := td[topic]; ok && d.Err == nil && d.ID == before[topic].ID {
			return fmt.Errorf("%s still listed", topic)
		}
		return nil
	})
}

// policy returns topic's cleanup.policy.
func policy(addr, topic string) (string, error) {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		return "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rc, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return "", err
	}
	r, err := rc.On(topic, nil)
	if err != nil {
		return "", err
	}
	if r.Err != nil {
		return "", r.Err
	}
	for _, c := range r.Configs {
		if c.Key == "cleanup.policy" {
			return c.MaybeValue(), nil
		}
	}
	return "", errors.New("no cleanup.policy")
}

// An idle running source whose offsets topic is deleted creates it
// again compacted (not auto-created with cleanup.policy=delete) and
// stores its positions again; one whose offsets topic is deleted and
// created again by someone else (a new topic id) stores them again too.
func TestSourceOffsetsTopicRecreated(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("dst", 2, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Logger: zap.NewNop()}
	src := &counterSource{parts: 2, limit: 30}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- rt.RunSource(ctx, "counter", src, SourceOptions{Topic: "dst", CommitInterval: 50 * time.Millisecond})
	}()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if !src.done() {
			return errors.New("not every position committed yet")
		}
		return nil
	})
	positions := func() error {
		n := 0
		for _, r := range b.ReadAll(DefaultOffsetsTopic) {
			if strings.Contains(string(r.Key), `"sp`) && strings.Contains(string(r.Value), `"seq":30`) {
				n++
			}
		}
		if n < 2 {
			return fmt.Errorf("%d of 2 positions in %s", n, DefaultOffsetsTopic)
		}
		return nil
	}
	deleteTopic(t, b.Addr, DefaultOffsetsTopic)
	testbroker.CheckFor(t, 30*time.Second, func() error {
		p, err := policy(b.Addr, DefaultOffsetsTopic)
		if err != nil {
			return err
		}
		if p != "compact" {
			t.Fatalf("%s created again with cleanup.policy=%s, want compact", DefaultOffsetsTopic, p)
		}
		return positions()
	})
	// Deleted and created again by someone else: here a producer's
	// auto-creation (cleanup.policy=delete), unless the source's own
	// check saw it missing first.
	deleteTopic(t, b.Addr, DefaultOffsetsTopic)
	cl := b.Client(kgo.AllowAutoTopicCreation())
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: DefaultOffsetsTopic, Key: []byte(`["other"]`), Value: []byte(`{"scan":{}}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testbroker.CheckFor(t, 30*time.Second, func() error {
		p, err := policy(b.Addr, DefaultOffsetsTopic)
		if err == nil && p != "compact" {
			err = fmt.Errorf("cleanup.policy=%s, want compact", p)
		}
		if err != nil {
			return err
		}
		return positions()
	})
}

// A source with RequirePositions (a worker group's singleton) that ran
// before (its transactional id's epoch > 0) and finds its offsets topic
// emptied fails with ErrPositionsLost, naming the topic and the ways on,
// instead of starting from scratch; RecoverPositions rebuilds the
// positions from its records' headers and it resumes exactly where it
// stopped; ResetPositions makes it start from scratch on purpose. A
// first run that stopped before producing anything starts again without
// the error (its scan record was committed before it read anything).
func TestExactlyOnceSourceRequiresPositions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			uniq := fmt.Sprintf("%s-%d", tb.Name, time.Now().UnixNano())
			topic, offsets := "req-dst-"+uniq, "req-offsets-"+uniq
			createTopic(t, tb.Addr, topic, 3)
			co := kafkaclient.Options{Brokers: []string{tb.Addr}}
			rt := &Runtime{Client: co, Logger: zap.NewNop(), OffsetsTopic: offsets}
			opts := SourceOptions{Topic: topic, CommitInterval: 50 * time.Millisecond, ExactlyOnce: true,
				RequirePositions: true, TransactionalID: "req-" + uniq}
			// A first run stopped before producing: the next start is
			// no failure.
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- rt.RunSource(ctx, "counter", &counterSource{parts: 3, pace: time.Hour}, opts) }()
			testbroker.CheckFor(t, 30*time.Second, func() error {
				recs, err := txntest.ReadCommittedErr(tb.Addr, offsets)
				if err == nil && len(recs) == 0 {
					err = errors.New("no scan record committed yet")
				}
				return err
			})
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			src := &counterSource{parts: 3, limit: 50}
			runSource(t, rt, src, opts)
			if len(src.restored) != 0 {
				t.Fatalf("restored %v after a run that produced nothing", src.restored)
			}

			deleteTopic(t, tb.Addr, offsets)
			ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := rt.RunSource(ctx, "counter", &counterSource{parts: 3, limit: 80}, opts)
			if !errors.Is(err, ErrPositionsLost) {
				t.Fatalf("start without positions: %v, want ErrPositionsLost", err)
			}
			for _, w := range []string{offsets + " holds no position of \"counter\"", "epoch", "weir connector positions counter --recover-from", "--reset"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if p, err := policy(tb.Addr, offsets); err != nil || p != "compact" {
				t.Errorf("%s created again with cleanup.policy=%s (%v), want compact", offsets, p, err)
			}
			if _, err := RecoverPositions(ctx, co, offsets, "counter", []string{"no-such-topic-" + uniq}); !errors.Is(err, kerr.UnknownTopicOrPartition) || !strings.Contains(err.Error(), "no-such-topic-"+uniq) {
				t.Errorf("RecoverPositions from a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION naming it", err)
			}
			n, err := RecoverPositions(ctx, co, offsets, "counter", []string{topic})
			if err != nil || n != 3 {
				t.Fatalf("RecoverPositions: %d, %v; want 3 positions", n, err)
			}
			if _, err := RecoverPositions(ctx, co, offsets, "counter", []string{topic}); err == nil || !strings.Contains(err.Error(), "already holds positions") {
				t.Errorf("RecoverPositions over stored positions: %v, want a refusal", err)
			}
			src = &counterSource{parts: 3, limit: 80}
			runSource(t, rt, src, opts)
			for i := 0; i < 3; i++ {
				if p := src.restored[fmt.Sprintf("sp%d", i)]; len(p) != 8 || binary.BigEndian.Uint64(p) != 49 {
					t.Fatalf("restored sp%d = %x, want 49", i, p)
				}
			}
			checkExactlyOnce(t, committedValues(txntest.ReadCommittedSettled(t, tb.Addr, topic)), 3, 80)

			// --reset: from scratch on purpose.
			deleteTopic(t, tb.Addr, offsets)
			if err := ResetPositions(ctx, co, offsets, "counter"); err != nil {
				t.Fatal(err)
			}
			src = &counterSource{parts: 3, limit: 5}
			runSource(t, rt, src, opts)
			if len(src.restored) != 0 {
				t.Fatalf("restored %v after ResetPositions", src.restored)
			}
		})
	}
}
