package console

import (
	"context"
	"fmt"
	"slices"
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
	consumeAndCommit(ctx, t, cl, 30)
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

// TestConsumerProtocolGroupPage: a group of the consumer group protocol
// (KIP-848: franz-go with ServerSideBalancer, the broker assigns) that
// consumed and committed 20 records while 7 more arrived shows on the
// groups list as a "consumer" group, Stable, with one member and lag 7;
// its page shows the protocol, the member with its epoch, subscription
// and assignment (all three partitions), and the lag per partition.
func TestConsumerProtocolGroupPage(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	e := startEnv(t, envOptions{})
	e.b.CreateTopic("views", 3, nil)
	e.produce(t, "views", 20, func(i int) string { return fmt.Sprint(i) }, func(i int) []byte { return []byte("{}") })
	cl := e.b.Client(kgo.ConsumerGroup("kip848"), kgo.ConsumeTopics("views"), kgo.ClientID("kip848-app"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.StickyBalancer()),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	consumeAndCommit(ctx, t, cl, 20)
	e.produce(t, "views", 7, func(i int) string { return fmt.Sprint(i) }, func(i int) []byte { return []byte("{}") })

	// The group page, once the member holds all three partitions.
	tab := br.Tab(t, browsertest.TabOptions{Width: 1280, Height: 900})
	testkit.CheckFor(t, 30*time.Second, func() error {
		if st := tab.Go(e.base + "groups/kip848"); st != 200 {
			return fmt.Errorf("group page: status %d", st)
		}
		if m := tab.Text("#members"); !strings.Contains(m, "views [0, 1, 2]") {
			return fmt.Errorf("members table without the whole assignment:\n%s", m)
		}
		return nil
	})
	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900})
		text := checkPage(t, tab, "group-consumer-protocol", e.base+"groups/kip848", 200)
		if p := tab.Text("#group-protocol"); !strings.Contains(p, "Group protocol consumer (KIP-848)") || !strings.Contains(p, "group epoch") {
			t.Errorf("group page: protocol line %q", p)
		}
		if got := tab.Text("#total-lag"); got != "7" {
			t.Errorf("total lag %q, want 7:\n%s", got, text)
		}
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#lag tbody tr").length`); n != 3 {
			t.Errorf("%d lag rows, want 3 (one per partition)", n)
		}
		owners := browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#lag tbody tr td:nth-child(3)")].map(td => td.textContent)`)
		for _, o := range owners {
			if o != "kip848-app" {
				t.Errorf("lag rows' member %q, want kip848-app (%q)", o, owners)
			}
		}
		cells := browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#members tbody tr td")].map(td => td.textContent)`)
		// Client id, host, instance id, member epoch, subscribed,
		// assigned, moving to, member id.
		if len(cells) != 8 || cells[0] != "kip848-app" || cells[3] == "0" || cells[4] != "views" || cells[5] != "views [0, 1, 2]" {
			t.Errorf("member row %q", cells)
		}
	}
	text := checkPage(t, tab, "groups-consumer-protocol", e.base+"groups", 200)
	row := browsertest.Eval[[]string](tab, `[...[...document.querySelectorAll("#groups tbody tr")].find(tr => tr.cells[0].textContent.startsWith("kip848")).cells].map(td => td.textContent)`)
	// Group, group protocol, state, protocol type, members, lag.
	if want := []string{"kip848", "consumer", "Stable", "consumer", "1", "7"}; !slices.Equal(row, want) {
		t.Errorf("groups list row %q, want %q:\n%s", row, want, text)
	}
}
