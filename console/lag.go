package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group types, as ListGroups v5 names them (KIP-848).
const (
	classicGroup  = "classic"  // JoinGroup/SyncGroup, client-side assignment
	consumerGroup = "consumer" // the consumer group protocol: ConsumerGroupHeartbeat, broker-side assignment
)

// groupView is a consumer group as the pages show it, a classic group
// (DescribeGroups) or a group of the consumer group protocol (KIP-848,
// ConsumerGroupDescribe) alike, with the lag of every partition its
// members are assigned or it committed to.
type groupView struct {
	Name         string
	Type         string // classicGroup or consumerGroup
	State        string
	ProtocolType string // classic groups: "consumer", "connect", ...
	Assignor     string // the classic group's protocol or the consumer group's assignor
	Coordinator  int32
	// Consumer groups: the group epoch and the epoch of its target
	// assignment.
	Epoch, AssignmentEpoch int32
	Members                []memberRow
	Lags                   []lagRow // sortLags: by topic and partition
	Total                  int64    // the lag summed over the partitions without error
	Err                    error    // describing the group or fetching its offsets
}

type memberRow struct {
	ID, InstanceID, ClientID, Host string
	Assigned                       string // "topic [0, 1]; ..."
	// Consumer groups: the member's epoch, its subscription and, while
	// it differs from Assigned, the assignment it moves to.
	Epoch      int32
	Subscribed string
	Target     string
	assigned   map[string][]int32
}

type lagRow struct {
	Topic            string
	Partition        int32
	Member, ClientID string
	Committed, End   int64 // Committed -1: none
	Lag              int64 // -1 with Err
	Err              string
}

// byTopic is the group's lag summed per topic (partitions without error).
func (g *groupView) byTopic() map[string]int64 {
	out := map[string]int64{}
	for _, l := range g.Lags {
		if l.Err == "" {
			out[l.Topic] += l.Lag
		}
	}
	return out
}

// describeGroups describes the named groups, or every group when none
// are named, of both types. A named group that neither describe knows is
// absent from the result.
func (c *Console) describeGroups(ctx context.Context, names ...string) (map[string]*groupView, error) {
	var classic, consumer []string
	var errs []error
	if len(names) == 0 {
		listed, err := c.adm.ListGroups(ctx)
		if err != nil && len(listed) == 0 {
			return nil, err
		}
		errs = append(errs, err)
		for _, g := range listed.Sorted() {
			switch g.GroupType {
			case consumerGroup:
				consumer = append(consumer, g.Group)
			case classicGroup, "": // "": a broker before ListGroups v5
				classic = append(classic, g.Group)
			} // share and streams groups are not consumer groups
		}
	} else {
		// A group's type is learnt by asking: DescribeGroups describes a
		// consumer group as Dead, ConsumerGroupDescribe a classic one as
		// GROUP_ID_NOT_FOUND.
		classic, consumer = names, names
	}
	out := map[string]*groupView{}
	if len(classic) > 0 {
		described, err := c.adm.DescribeGroups(ctx, classic...)
		if err != nil && len(described) == 0 {
			return nil, err
		}
		errs = append(errs, err)
		for _, d := range described {
			if len(names) > 0 && (d.State == "Dead" && d.Err == nil || errors.Is(d.Err, kerr.GroupIDNotFound)) {
				continue // perhaps a consumer group; else unknown
			}
			out[d.Group] = classicView(d)
		}
	}
	if len(consumer) > 0 {
		described, err := c.adm.DescribeConsumerGroups(ctx, consumer...)
		for _, d := range described {
			if errors.Is(d.Err, kerr.GroupIDNotFound) || (len(names) > 0 && d.State == "Dead") {
				continue // a classic group, or none
			}
			out[d.Group] = consumerView(d)
		}
		// Asked of named groups that are all classic ones, the error of a
		// broker without ConsumerGroupDescribe (before Kafka 4.0) is
		// no error.
		if err != nil && (len(names) == 0 || len(out) < len(names)) {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

func classicView(d kadm.DescribedGroup) *groupView {
	g := &groupView{Name: d.Group, Type: classicGroup, State: d.State, ProtocolType: d.ProtocolType, Assignor: d.Protocol,
		Coordinator: d.Coordinator.NodeID, Err: d.Err}
	for _, m := range d.Members {
		row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			row.InstanceID = *m.InstanceID
		}
		if a, ok := m.Assigned.AsConsumer(); ok {
			row.assigned = map[string][]int32{}
			for _, t := range a.Topics {
				row.assigned[t.Topic] = append(row.assigned[t.Topic], t.Partitions...)
			}
			row.Assigned = fmtAssignment(row.assigned)
		}
		g.Members = append(g.Members, row)
	}
	return g
}

func consumerView(d kadm.DescribedConsumerGroup) *groupView {
	g := &groupView{Name: d.Group, Type: consumerGroup, State: d.State, ProtocolType: "consumer", Assignor: d.AssignorName,
		Coordinator: d.Coordinator.NodeID, Epoch: d.Epoch, AssignmentEpoch: d.AssignmentEpoch, Err: d.Err}
	for _, m := range d.Members {
		row := memberRow{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: m.MemberEpoch,
			assigned: topicsSetMap(m.Assignment)}
		if m.InstanceID != nil {
			row.InstanceID = *m.InstanceID
		}
		sub := slices.Clone(m.SubscribedTopics)
		sort.Strings(sub)
		row.Subscribed = strings.Join(sub, ", ")
		if m.SubscribedTopicRegex != nil && *m.SubscribedTopicRegex != "" {
			row.Subscribed = strings.TrimPrefix(row.Subscribed+", pattern "+*m.SubscribedTopicRegex, ", ")
		}
		row.Assigned = fmtAssignment(row.assigned)
		if t := fmtAssignment(topicsSetMap(m.TargetAssignment)); t != row.Assigned {
			row.Target = t
		}
		g.Members = append(g.Members, row)
	}
	slices.SortFunc(g.Members, func(a, b memberRow) int { return cmp.Compare(a.ID, b.ID) })
	return g
}

func topicsSetMap(s kadm.TopicsSet) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range s {
		for p := range ps {
			out[t] = append(out[t], p)
		}
	}
	return out
}

// fmtAssignment: "a [0, 1]; b [2]", topics and partitions sorted.
func fmtAssignment(a map[string][]int32) string {
	var parts []string
	for t, ps := range a {
		ps = slices.Clone(ps)
		slices.Sort(ps)
		parts = append(parts, t+" ["+joinInt32(ps)+"]")
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// groupLags describes the groups (all of them when none are named) and
// computes their lag. ends holds end offsets already known (it may be
// empty, not nil); the ends of the other assigned or committed
// partitions are asked with one ListOffsets per leader and added to it.
func (c *Console) groupLags(ctx context.Context, ends kadm.ListedOffsets, names ...string) (map[string]*groupView, error) {
	groups, err := c.describeGroups(ctx, names...)
	if err != nil && len(groups) == 0 {
		return nil, err
	}
	var ask []string
	for n, g := range groups {
		if g.Err == nil {
			ask = append(ask, n)
		}
	}
	fetched := c.fetchOffsets(ctx, groups, ask)
	missing := map[string][]int32{}
	need := func(t string, p int32) {
		if _, ok := ends.Lookup(t, p); !ok && !slices.Contains(missing[t], p) {
			missing[t] = append(missing[t], p)
		}
	}
	for _, f := range fetched {
		for t, ps := range f.Fetched {
			for p := range ps {
				need(t, p)
			}
		}
	}
	for _, g := range groups {
		for _, m := range g.Members {
			for t, ps := range m.assigned {
				for _, p := range ps {
					need(t, p)
				}
			}
		}
	}
	more, eerr := c.listOffsets(ctx, atEnd, missing)
	for t, ps := range more {
		if ends[t] == nil {
			ends[t] = ps
			continue
		}
		for p, o := range ps {
			ends[t][p] = o
		}
	}
	for n, g := range groups {
		f, ok := fetched[n]
		if g.Err != nil || !ok {
			continue
		}
		if f.Err != nil {
			g.Err = fmt.Errorf("fetching the committed offsets: %w", f.Err)
			continue
		}
		g.computeLag(f.Fetched, ends)
	}
	return groups, errors.Join(err, eerr)
}

// computeLag fills g.Lags and g.Total as kadm.CalculateGroupLag does
// (without start offsets): every assigned or committed partition; lag =
// end - committed, or end when nothing is committed; never below 0; -1
// with an error when the commit or the end has one.
func (g *groupView) computeLag(commits kadm.OffsetResponses, ends kadm.ListedOffsets) {
	n := 0
	for _, ps := range commits {
		n += len(ps)
	}
	g.Lags = make([]lagRow, 0, n)
	add := func(t string, p int32, m *memberRow) {
		row := lagRow{Topic: t, Partition: p, Committed: -1, Lag: -1}
		if m != nil {
			row.Member, row.ClientID = m.ID, m.ClientID
		}
		var err error
		if c, ok := commits.Lookup(t, p); ok {
			row.Committed, err = c.At, c.Err
		}
		end, ok := ends.Lookup(t, p)
		switch {
		case err != nil:
		case !ok:
			err = errors.New("missing from list offsets")
		default:
			row.End, err = end.Offset, end.Err
		}
		if err != nil {
			row.Err = err.Error()
		} else {
			row.Lag = row.End
			if row.Committed >= 0 {
				row.Lag = row.End - row.Committed
			}
			row.Lag = max(row.Lag, 0)
			g.Total += row.Lag
		}
		g.Lags = append(g.Lags, row)
	}
	// The assigned partitions, then the committed ones no member holds.
	var owned map[string]map[int32]bool
	for i := range g.Members {
		m := &g.Members[i]
		for t, ps := range m.assigned {
			if owned == nil {
				owned = map[string]map[int32]bool{}
			}
			if owned[t] == nil {
				owned[t] = map[int32]bool{}
			}
			for _, p := range ps {
				if !owned[t][p] {
					owned[t][p] = true
					add(t, p, m)
				}
			}
		}
	}
	for t, ps := range commits {
		for p := range ps {
			if !owned[t][p] {
				add(t, p, nil)
			}
		}
	}
}

// sortLags sorts the lag rows by topic and partition (for the page; the
// snapshot's sums need no order).
func (g *groupView) sortLags() {
	slices.SortFunc(g.Lags, func(a, b lagRow) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
}

// fetchOffsets asks the committed offsets of the groups named: one
// OffsetFetch (v8+: many groups a request) to each group's coordinator
// as its describe named it, straight to it. kadm's FetchManyOffsets goes
// through kgo's sharding, which, for an answer without topic ids (below
// v10), asks the metadata of every topic in it, uncached, each time.
// Against a broker without v8 it is kadm's.
func (c *Console) fetchOffsets(ctx context.Context, groups map[string]*groupView, names []string) kadm.FetchOffsetsResponses {
	out := kadm.FetchOffsetsResponses{}
	byCoord := map[int32][]string{}
	for _, n := range names {
		byCoord[groups[n].Coordinator] = append(byCoord[groups[n].Coordinator], n)
	}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		old []string // asked of a broker without OffsetFetch v8
	)
	for coord, gs := range byCoord {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrOffsetFetchRequest()
			for _, g := range gs {
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group, rg.MemberEpoch = g, -1 // every topic (Topics nil); no member: an admin's fetch
				req.Groups = append(req.Groups, rg)
			}
			kr, err := c.kcl.Broker(int(coord)).Request(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && req.GetVersion() < 8 {
				old = append(old, gs...)
				return
			}
			if err != nil {
				for _, g := range gs {
					out[g] = kadm.FetchOffsetsResponse{Group: g, Err: err}
				}
				return
			}
			for _, rg := range kr.(*kmsg.OffsetFetchResponse).Groups {
				f := kadm.FetchOffsetsResponse{Group: rg.Group, Fetched: kadm.OffsetResponses{}, Err: kerr.ErrorForCode(rg.ErrorCode)}
				for _, t := range rg.Topics {
					ps := make(map[int32]kadm.OffsetResponse, len(t.Partitions))
					for _, p := range t.Partitions {
						o := kadm.OffsetResponse{Offset: kadm.Offset{Topic: t.Topic, Partition: p.Partition, At: p.Offset,
							LeaderEpoch: p.LeaderEpoch}, Err: kerr.ErrorForCode(p.ErrorCode)}
						if p.Metadata != nil {
							o.Metadata = *p.Metadata
						}
						ps[p.Partition] = o
					}
					f.Fetched[t.Topic] = ps
				}
				out[rg.Group] = f
			}
		}()
	}
	wg.Wait()
	if len(old) > 0 {
		for g, f := range c.adm.FetchManyOffsets(ctx, old...) {
			out[g] = f
		}
	}
	return out
}
