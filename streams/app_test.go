package streams

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
)

// instance is one App running in a goroutine with its own clients and
// state directory.
type instance struct {
	app    *App
	cancel context.CancelFunc
	errc   chan error
}

func startInstance(t *testing.T, tp *Topology, brokers []string, appID string, mod func(*Config)) *instance {
	t.Helper()
	cfg := Config{
		ApplicationID:  appID,
		Client:         kafkaclient.Options{Brokers: brokers, Extra: []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}},
		StateDir:       t.TempDir(),
		CommitInterval: 200 * time.Millisecond,
	}
	if os.Getenv("WEIR_STREAMS_DEBUG") != "" {
		cfg.Logger, _ = zap.NewDevelopment()
		cfg.Client.Extra = append(cfg.Client.Extra, kgo.WithLogger(kzapLogger{cfg.Logger}))
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{app: a, cancel: cancel, errc: make(chan error, 1)}
	go func() { in.errc <- a.Run(ctx) }()
	return in
}

// stop shuts the instance down cleanly (commit, checkpoint, leave).
func (in *instance) stop(t *testing.T) {
	t.Helper()
	in.cancel()
	select {
	case err := <-in.errc:
		if err != nil {
			t.Fatalf("instance %s: %v", in.app.cfg.StateDir, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("instance did not stop")
	}
}

func produceAll(t testing.TB, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	var mu sync.Mutex
	var first error
	for _, r := range recs {
		cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if first != nil {
		t.Fatal(first)
	}
}

// groupCaughtUp reports nil when group has committed the end offset of
// every partition of topic.
func groupCaughtUp(ctx context.Context, adm *kadm.Client, group, topic string) error {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	com, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	var behind int64
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := com.Lookup(o.Topic, o.Partition)
		if !ok {
			behind += o.Offset
			return
		}
		behind += o.Offset - c.At
	})
	if behind != 0 {
		return fmt.Errorf("group %s is %d records behind on %s", group, behind, topic)
	}
	return nil
}

func readLastValues(t *testing.T, b killBroker, topic string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, r := range b.ReadAll(topic) {
		n, err := Int64().Decode(r.Value)
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		got[string(r.Key)] = n
	}
	return got
}

type kzapLogger struct{ l *zap.Logger }

func (k kzapLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }
func (k kzapLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	k.l.Sugar().Infow("kgo: "+msg, kv...)
}
