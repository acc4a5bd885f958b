package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupsData struct {
	Groups []groupRow
	AsOf   AsOf
}

type groupRow struct {
	Name, Type, State, ProtocolType string
	Members                         int
	Lag                             int64
	Err                             string
}

// groupsPage lists the consumer groups, classic and consumer-protocol
// (KIP-848) ones, with their state, members and total lag.
func (c *Console) groupsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	// The lag snapshot the sampler takes every interval (it runs while
	// pages are viewed), shared by every viewer.
	// Up to an interval and CacheFor old, so that a view does not take
	// it itself while the sampler's next one is due or under way.
	maxAge := c.cfg.CacheFor
	if maxAge > 0 {
		maxAge += c.cfg.SampleInterval
	}
	snap, at, err := c.lags(ctx, maxAge)
	d := groupsData{AsOf: asOf(at, maxAge)}
	if snap == nil {
		c.render(w, r, "groups", "Consumer groups", d, err)
		return
	}
	for _, g := range snap.Groups {
		row := groupRow{Name: g.Name, Type: g.Type, State: g.State, ProtocolType: g.ProtocolType, Members: len(g.Members), Lag: g.Total}
		if g.Err != nil {
			row.Err = g.Err.Error()
		}
		d.Groups = append(d.Groups, row)
	}
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Name < d.Groups[j].Name })
	c.render(w, r, "groups", "Consumer groups", d, err)
}

type groupData struct {
	*groupView
	History template.HTML
	AsOf    AsOf
}

// maxGroupsCached bounds the groups whose page data is kept.
const maxGroupsCached = 100

// groupPage: a group's members, assignment, lag per partition and lag
// history.
func (c *Console) groupPage(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	title := "Consumer group " + group
	ctx, cancel := c.ctx(r)
	defer cancel()
	// Shared by the group's viewers for CacheFor.
	c.groupMu.Lock()
	if c.groupCache == nil || len(c.groupCache) > maxGroupsCached {
		c.groupCache = map[string]*shared[*groupView]{}
	}
	sh := c.groupCache[group]
	if sh == nil {
		sh = &shared[*groupView]{}
		c.groupCache[group] = sh
	}
	c.groupMu.Unlock()
	g, at, err := sh.get(ctx, c.cfg.CacheFor, func(ctx context.Context) (*groupView, error) {
		groups, err := c.groupLags(ctx, kadm.ListedOffsets{}, group)
		g := groups[group]
		if g == nil && err == nil {
			g = &groupView{Name: group, State: "Dead"}
		}
		if g != nil {
			g.sortLags()
		}
		return g, err
	})
	if g == nil {
		c.render(w, r, "group", title, nil, err)
		return
	}
	if g.State == "Dead" {
		c.notFound(w, r, title, fmt.Sprintf("consumer group %q does not exist", group))
		return
	}
	d := groupData{groupView: g, AsOf: asOf(at, c.cfg.CacheFor)}
	d.History = Chart{Title: "Lag of " + group + " over time", Unit: "records", Series: c.hist.groupLag(group),
		Empty: fmt.Sprintf("No samples yet: the lag is sampled every %s.", c.cfg.SampleInterval)}.SVG()
	if err == nil {
		err = g.Err
	}
	c.render(w, r, "group", title, d, err)
}
