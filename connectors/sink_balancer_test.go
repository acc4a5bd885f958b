package connectors

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
)

// TestSinkTaskBalancer: the group strategy is configurable, the group
// really runs it, and an unknown name is a config error naming it.
func TestSinkTaskBalancer(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("bal", 4, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Metrics: NewMetricSet(nil)}

	err := rt.RunSink(context.Background(), "bad", &memSink{}, SinkOptions{Topics: []string{"bal"}, Balancer: "sticky"})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("unknown balancer: %v, want ErrConfig", err)
	}

	for _, name := range []string{"range", "roundrobin", "cooperative-sticky"} {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		group := "bal-" + name
		go func() {
			errc <- rt.RunSink(ctx, "bal", &memSink{}, SinkOptions{Topics: []string{"bal"}, Group: group, Balancer: name,
				FlushInterval: 50 * time.Millisecond})
		}()
		adm := kadm.NewClient(b.Client())
		testbroker.CheckFor(t, 20*time.Second, func() error {
			gs, err := adm.DescribeGroups(context.Background(), group)
			if err != nil {
				return err
			}
			g := gs[group]
			if g.State != "Stable" || g.Protocol != name {
				return fmt.Errorf("group %s: state %q protocol %q", group, g.State, g.Protocol)
			}
			return nil
		})
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
