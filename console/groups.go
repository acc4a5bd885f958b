package console

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
)

type groupsData struct {
	Groups []groupRow
}

type groupRow struct {
	Name, State, Protocol string
	Members               int
	Lag                   int64
	Err                   string
}

// groupsPage lists the consumer groups with their state, members and
// total lag.
func (c *Console) groupsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	lags, err := c.groupLags(ctx)
	var d groupsData
	for _, gl := range lags {
		row := groupRow{Name: gl.Group, State: gl.State, Protocol: gl.ProtocolType, Members: len(gl.Members), Lag: gl.Lag.Total()}
		if e := gl.Error(); e != nil {
			row.Err = e.Error()
		}
		d.Groups = append(d.Groups, row)
	}
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Name < d.Groups[j].Name })
	c.render(w, r, "groups", "Consumer groups", d, err)
}

type groupData struct {
	Name, State, Protocol, ProtocolType string
	Coordinator                         int32
	Members                             []memberRow
	Lags                                []lagRow
	Total                               int64
	History                             template.HTML
}

type memberRow struct {
	ID, InstanceID, ClientID, Host string
	Assigned                       string
}

type lagRow struct {
	Topic            string
	Partition        int32
	Member, ClientID string
	Committed, End   int64
	Lag              int64
	Err              string
}

// groupPage: a group's members, assignment, lag per partition and lag
// history.
func (c *Console) groupPage(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	title := "Consumer group " + group
	ctx, cancel := c.ctx(r)
	defer cancel()
	lags, err := c.groupLags(ctx, group)
	if err != nil && len(lags) == 0 {
		c.render(w, r, "group", title, nil, err)
		return
	}
	gl, ok := lags[group]
	if !ok || gl.State == "Dead" {
		c.notFound(w, r, title, fmt.Sprintf("consumer group %q does not exist", group))
		return
	}
	d := groupData{Name: group, State: gl.State, Protocol: gl.Protocol, ProtocolType: gl.ProtocolType, Coordinator: gl.Coordinator.NodeID}
	for _, m := range gl.Members {
		row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			row.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			var parts []string
			for _, t := range a.Topics {
				ps := append([]int32(nil), t.Partitions...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				parts = append(parts, t.Topic+" ["+joinInt32(ps)+"]")
			}
			sort.Strings(parts)
			row.Assigned = strings.Join(parts, "; ")
		}
		d.Members = append(d.Members, row)
	}
	for _, l := range gl.Lag.Sorted() {
		row := lagRow{Topic: l.Topic, Partition: l.Partition, Committed: l.Commit.At, End: l.End.Offset, Lag: l.Lag}
		if l.Member != nil {
			row.Member, row.ClientID = l.Member.MemberID, l.Member.ClientID
		}
		if l.Err != nil {
			row.Err = l.Err.Error()
		}
		if l.Lag > 0 {
			d.Total += l.Lag
		}
		d.Lags = append(d.Lags, row)
	}
	d.History = Chart{Title: "Lag of " + group + " over time", Unit: "records", Series: c.hist.groupLag(group),
		Empty: fmt.Sprintf("No samples yet: the lag is sampled every %s.", c.cfg.SampleInterval)}.SVG()
	c.render(w, r, "group", title, d, gl.Error())
}
