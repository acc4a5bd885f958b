package brokertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A broker cut off from the controller quorum but not from the other
// brokers is fenced, yet keeps fetching from the leaders as a follower of
// the epochs it knows. Before, every such fetch made the leader propose it
// back into the ISR and log the controller's refusal ("broker 3 is not
// live"): thousands of warnings a minute in the chaos test. A leader now
// proposes only live brokers, and a warning that keeps recurring is said
// once per partition and state, with counts.
func TestFencedFollowerWarningsStayReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("watches a fenced broker for seconds")
	}
	t.Parallel()
	core, logs := observer.New(zapcore.WarnLevel)
	c := NewCluster(t, Brokers(3), LogTee(core))
	const parts = 6
	c.CreateTopic("warn", parts, 3, nil)

	cl := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // keeps the followers fetching all the time
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Topic: "warn", Value: fmt.Appendf(nil, "v%d", i)}
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			_ = cl.ProduceSync(pctx, r).FirstErr()
			pcancel()
		}
	}()
	defer func() { cancel(); wg.Wait() }()

	// Broker 3 loses the controller quorum only.
	for _, id := range []int32{1, 2} {
		c.Network().Cut(3, id, Controller)
		c.Network().Cut(id, 3, Controller)
	}
	c.WaitFor(20*time.Second, func() error {
		img := c.Broker(1).Image()
		if img.Live(3) {
			return fmt.Errorf("broker 3 not fenced yet")
		}
		for p := int32(0); p < parts; p++ {
			if mp, _ := img.Partition("warn", p); slices.Contains(mp.ISR, 3) || mp.Leader == 3 {
				return fmt.Errorf("warn-%d still has broker 3: %+v", p, mp)
			}
		}
		return nil
	})
	// Three seconds of fetches by the fenced broker (hundreds of them).
	time.Sleep(3 * time.Second)
	refused := logs.FilterMessageSnippet("ISR change refused").Len()
	for p := int32(0); p < parts; p++ {
		if isr := c.Partition("warn", p).ISR; slices.Contains(isr, 3) {
			t.Fatalf("warn-%d: fenced broker 3 back in the ISR %v", p, isr)
		}
	}
	// Healed, it is unfenced and rejoins every ISR.
	for _, id := range []int32{1, 2} {
		c.Network().Heal(3, id, Controller)
		c.Network().Heal(id, 3, Controller)
	}
	c.WaitFor(30*time.Second, func() error {
		for p := int32(0); p < parts; p++ {
			if isr := c.Broker(1).Image(); !isr.Live(3) {
				return fmt.Errorf("broker 3 still fenced")
			}
			if mp := c.Partition("warn", p); len(mp.ISR) != 3 {
				return fmt.Errorf("warn-%d ISR %v", p, mp.ISR)
			}
		}
		return nil
	})
	cancel()
	wg.Wait()
	all := logs.All()
	byMsg := map[string]int{}
	for _, e := range all {
		byMsg[e.LoggerName+": "+strings.SplitN(e.Message, " (repeated", 2)[0]]++
	}
	t.Logf("%d warnings over the whole test: %v", len(all), byMsg)
	if refused > parts {
		t.Fatalf("%d 'ISR change refused' warnings while broker 3 was fenced, want at most one per partition (%d)", refused, parts)
	}
	// Whatever else the brokers warn about, it stays readable: no line
	// repeated more than once per partition and broker.
	for msg, n := range byMsg {
		if n > 3*parts {
			t.Errorf("%q logged %d times", msg, n)
		}
	}
}
