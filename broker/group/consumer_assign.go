package group

// Server-side assignors of the consumer protocol (group.consumer.assignors,
// Kafka's names "uniform" and "range") and the resolution of members'
// subscriptions (topic names and regular expressions) against the
// cluster's topics.
//
//	uniform  sticky and balanced: partitions of the previous target stay
//	         with their member while it still subscribes to the topic and
//	         holds no more than its share (the total divided by the
//	         members, one more for the first remainder); the rest go to the
//	         subscribed member holding the fewest. As Kafka's
//	         UniformAssignor for homogeneous subscriptions; with
//	         heterogeneous ones every partition still goes to a member
//	         subscribed to its topic, least loaded first.
//	range    Kafka's RangeAssignor: per topic, its subscribed members in
//	         order (static members by instance id first, then the others
//	         by member id) get contiguous ranges, the first
//	         partitions%members one partition more.
//
// Regular expressions (SubscribedTopicRegex) are RE2 — Kafka compiles
// them with RE2/J — matched against whole topic names (Java's
// Matcher.matches), internal topics excluded.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Assignor names, as Kafka's.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

type regexpMatcher struct {
	re      *regexp.Regexp
	version int64
	matched []string
}

// internalTopics are Kafka's internal topics, never matched by a regular
// expression subscription.
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

func (m *Machine) compileRegex(expr string) (*regexpMatcher, error) {
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, err
	}
	return &regexpMatcher{re: re, version: -1}, nil
}

func (m *Machine) knownAssignor(name string) bool {
	for _, a := range m.cfg.ConsumerAssignors {
		if a == name {
			return true
		}
	}
	return false
}

// matches returns the topics the regular expression matches now.
func (r *regexpMatcher) matches(ts Topics) []string {
	if v := ts.Version(); v != r.version || v < 0 {
		r.matched = r.matched[:0]
		for _, n := range ts.Names() {
			if !internalTopics[n] && r.re.MatchString(n) {
				r.matched = append(r.matched, n)
			}
		}
		sort.Strings(r.matched)
		r.version = v
	}
	return r.matched
}

// subscribedTopics resolves mb's subscription: the existing topics it
// names or its regular expression matches, by name.
func (m *Machine) subscribedTopics(mb *consumerMember) map[string]TopicInfo {
	out := map[string]TopicInfo{}
	if m.topics == nil {
		return out
	}
	ts := m.topics()
	for _, n := range mb.topics {
		if t, ok := ts.Topic(n); ok {
			out[n] = t
		}
	}
	if mb.re != nil {
		for _, n := range mb.re.matches(ts) {
			if t, ok := ts.Topic(n); ok {
				out[n] = t
			}
		}
	}
	return out
}

// refreshSubscription recomputes the signature of the group's subscribed
// topics when the topics changed; it reports whether the signature
// changed (the group epoch must then be bumped).
func (m *Machine) refreshSubscription(g *group) bool {
	cg := g.cg
	if m.topics == nil {
		return false
	}
	v := m.topics().Version()
	if v == cg.topicsVersion && v >= 0 {
		return false
	}
	sig := m.subscriptionSignature(cg)
	cg.topicsVersion = v
	if sig == cg.subscription {
		return false
	}
	cg.subscription = sig
	return true
}

func (m *Machine) subscriptionSignature(cg *consumerGroup) string {
	all := map[string]TopicInfo{}
	for _, mb := range cg.members {
		for n, t := range m.subscribedTopics(mb) {
			all[n] = t
		}
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		t := all[n]
		fmt.Fprintf(&b, "%s/%x/%d;", n, t.ID[:], t.Partitions)
	}
	return b.String()
}

// preferredAssignor is the assignor most members ask for (ties: the
// order of group.consumer.assignors), else the first configured one.
func (m *Machine) preferredAssignor(cg *consumerGroup) string {
	votes := map[string]int{}
	for _, mb := range cg.members {
		if mb.assignor != "" {
			votes[mb.assignor]++
		}
	}
	best := ""
	for _, a := range m.cfg.ConsumerAssignors {
		if votes[a] > votes[best] || best == "" && votes[a] > 0 {
			best = a
		}
	}
	if best == "" && len(m.cfg.ConsumerAssignors) > 0 {
		best = m.cfg.ConsumerAssignors[0]
	}
	return best
}

// computeTarget computes the group's target assignment with its
// preferred assignor.
func (m *Machine) computeTarget(g *group) {
	cg := g.cg
	ids := make([]string, 0, len(cg.members))
	subs := map[string]map[string]TopicInfo{}
	for id, mb := range cg.members {
		ids = append(ids, id)
		subs[id] = m.subscribedTopics(mb)
	}
	sort.Strings(ids)
	cg.assignor = m.preferredAssignor(cg)
	if cg.assignor == AssignorRange {
		cg.target = assignRange(cg, ids, subs)
	} else {
		cg.target = assignUniform(cg, ids, subs)
	}
}

type namedTP struct {
	topic string
	id    TopicID
	p     int32
}

func assignUniform(cg *consumerGroup, ids []string, subs map[string]map[string]TopicInfo) map[string]assignment {
	out := make(map[string]assignment, len(ids))
	if len(ids) == 0 {
		return out
	}
	byID := map[TopicID]TopicInfo{}
	for _, s := range subs {
		for _, t := range s {
			byID[t.ID] = t
		}
	}
	var all []namedTP
	for _, t := range byID {
		for p := int32(0); p < t.Partitions; p++ {
			all = append(all, namedTP{t.Name, t.ID, p})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].topic != all[j].topic {
			return all[i].topic < all[j].topic
		}
		return all[i].p < all[j].p
	})
	// 1. Keep the previous target where still valid.
	taken := make(map[tp]string, len(all))
	counts := make(map[string]int, len(ids))
	for _, id := range ids {
		a := assignment{}
		out[id] = a
		prev := cg.target[id]
		prevIDs := make([]TopicID, 0, len(prev))
		for tid := range prev {
			prevIDs = append(prevIDs, tid)
		}
		sort.Slice(prevIDs, func(i, j int) bool { return byID[prevIDs[i]].Name < byID[prevIDs[j]].Name })
		for _, tid := range prevIDs {
			t, ok := byID[tid]
			if !ok {
				continue
			}
			if _, sub := subs[id][t.Name]; !sub {
				continue
			}
			for _, p := range prev[tid] {
				k := tp{tid, p}
				if p < t.Partitions && taken[k] == "" {
					taken[k] = id
					a.add(tid, p)
					counts[id]++
				}
			}
		}
	}
	// 2. Shed what exceeds each member's share: the most loaded members
	// may keep one more while the remainder lasts.
	quota, extra := len(all)/len(ids), len(all)%len(ids)
	order := append([]string(nil), ids...)
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	for i, id := range order {
		allowed := quota
		if i < extra {
			allowed++
		}
		a := out[id]
		for counts[id] > allowed {
			// Drop the last partition of the topic named last.
			var last TopicID
			lastName := ""
			for tid := range a {
				if n := byID[tid].Name; lastName == "" || n > lastName {
					last, lastName = tid, n
				}
			}
			ps := a[last]
			delete(taken, tp{last, ps[len(ps)-1]})
			if len(ps) == 1 {
				delete(a, last)
			} else {
				a[last] = ps[:len(ps)-1]
			}
			counts[id]--
		}
	}
	// 3. Give every free partition to the least loaded subscribed member.
	for _, t := range all {
		if taken[tp{t.id, t.p}] != "" {
			continue
		}
		best := ""
		for _, id := range ids {
			if _, ok := subs[id][t.topic]; ok && (best == "" || counts[id] < counts[best]) {
				best = id
			}
		}
		if best == "" {
			continue
		}
		out[best].add(t.id, t.p)
		taken[tp{t.id, t.p}] = best
		counts[best]++
	}
	return out
}

func assignRange(cg *consumerGroup, ids []string, subs map[string]map[string]TopicInfo) map[string]assignment {
	out := make(map[string]assignment, len(ids))
	order := append([]string(nil), ids...)
	inst := func(id string) *string { return cg.members[id].instanceID }
	sort.SliceStable(order, func(i, j int) bool {
		a, b := inst(order[i]), inst(order[j])
		switch {
		case a != nil && b != nil:
			return *a < *b
		case a != nil:
			return true
		case b != nil:
			return false
		}
		return order[i] < order[j]
	})
	topics := map[string]TopicInfo{}
	for _, id := range ids {
		out[id] = assignment{}
		for n, t := range subs[id] {
			topics[n] = t
		}
	}
	for n, t := range topics {
		var members []string
		for _, id := range order {
			if _, ok := subs[id][n]; ok {
				members = append(members, id)
			}
		}
		quota, extra := int(t.Partitions)/len(members), int(t.Partitions)%len(members)
		next := 0
		for _, id := range members {
			q := quota
			if extra > 0 {
				q++
				extra--
			}
			for p := next; p < next+q; p++ {
				out[id].add(t.ID, int32(p))
			}
			next += q
		}
	}
	return out
}
