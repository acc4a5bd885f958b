package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/browsertest"
	"weir/internal/testkit"
)

// TestGroupsPage: a consumer group that consumed and committed 30
// records and then stopped while 15 more arrived shows on the groups
// page with its lag; its page shows the member and its assignment, the
// lag per partition (15 in all) and a lag history chart with a line.
func TestGroupsPage(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	e := startEnv(t, envOptions{})
	e.b.CreateTopic("clicks", 2, nil)
	e.produce(t, "clicks", 30, func(i int) string { return fmt.Sprint(i) }, func(i int) []byte { return []byte("{}") })
	cl := e.b.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("clicks"), kgo.ClientID("billing-app"),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < 30; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	e.produce(t, "clicks", 15, func(i int) string { return fmt.Sprint(i) }, func(i int) []byte { return []byte("{}") })

	tab := br.Tab(t, browsertest.TabOptions{Width: 390, Height: 844})
	text := checkPage(t, tab, "groups", e.base+"groups", 200)
	if !strings.Contains(text, "billing") {
		t.Fatalf("groups page lacks billing:\n%s", text)
	}
	// Two lag samples make a line.
	testkit.CheckFor(t, 20*time.Second, func() error {
		for _, s := range e.c.hist.groupLag("billing") {
			if len(s.Points) >= 2 && s.Points[len(s.Points)-1].V == 15 {
				return nil
			}
		}
		return fmt.Errorf("lag history of billing: %+v", e.c.hist.groupLag("billing"))
	})
	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900})
		if text := checkPage(t, tab, "group", e.base+"groups/billing", 200); !strings.Contains(text, "Lag of billing over time") {
			t.Errorf("group page lacks its lag history:\n%s", text)
		}
		if got := tab.Text("#total-lag"); got != "15" {
			t.Errorf("total lag %q, want 15", got)
		}
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#lag tbody tr").length`); n != 2 {
			t.Errorf("%d lag rows, want 2 (one per partition)", n)
		}
		members := tab.Text("#members")
		if !strings.Contains(members, "billing-app") || !strings.Contains(members, "clicks [0, 1]") {
			t.Errorf("members table lacks the member or its assignment:\n%s", members)
		}
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("svg.chart polyline").length`); n != 1 {
			t.Errorf("lag history: %d lines, want 1", n)
		}
	}
	// A group that does not exist: 404 with a message.
	if st := tab.Go(e.base + "groups/nobody"); st != 404 || !strings.Contains(tab.Text("[role=alert]"), "does not exist") {
		t.Errorf("missing group: status %d, alert %q", st, tab.Text("[role=alert]"))
	}
}
