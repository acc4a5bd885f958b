package streams

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Topology is a validated, immutable processing graph built by a Builder.
// One Topology may run in many Apps (instances) and drivers at once.
type Topology struct {
	sources []*node // sorted by topic
	stores  []*storeSpec
	// upstream: for each repartition topic (source key), the source keys
	// whose tasks write it (its partition count is their maximum).
	upstream map[string][]string
	owned    map[*node][]*storeSpec // stores owned by each source's tasks
}

// sourceKey is a source's key in Builder.sources: the topic, or NUL +
// name for internal topics.
func sourceKey(n *node) string {
	if n.source.internal {
		return "\x00" + n.source.topic
	}
	return n.source.topic
}

// topicName is the topic a source reads in app appID.
func topicName(appID string, n *node) string {
	if n.source.internal {
		return appID + "-" + n.source.topic
	}
	return n.source.topic
}

// Build validates the topology. Errors name the operator or store at
// fault and wrap ErrTopology.
func (b *Builder) Build() (*Topology, error) {
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	if len(b.sources) == 0 {
		return nil, fmt.Errorf("%w: no source topics (use From)", ErrTopology)
	}
	tp := &Topology{upstream: make(map[string][]string), owned: make(map[*node][]*storeSpec)}
	for _, n := range b.sources {
		tp.sources = append(tp.sources, n)
	}
	slices.SortFunc(tp.sources, func(a, c *node) int { return strings.Compare(sourceKey(a), sourceKey(c)) })
	owner := make(map[*storeSpec]string)
	for _, src := range tp.sources {
		seen := make(map[*node]bool)
		var walk func(n *node)
		walk = func(n *node) {
			if seen[n] {
				return
			}
			seen[n] = true
			if n.store != nil {
				tp.owned[src] = append(tp.owned[src], n.store)
			}
			if n.sink != nil && n.sink.internal {
				key := "\x00" + n.sink.topic
				if !slices.Contains(tp.upstream[key], sourceKey(src)) {
					tp.upstream[key] = append(tp.upstream[key], sourceKey(src))
				}
			}
			for _, c := range n.children {
				walk(c)
			}
		}
		walk(src)
		for _, s := range tp.owned[src] {
			if o, dup := owner[s]; dup {
				return nil, fmt.Errorf("%w: store %s is fed by two input topics (%s and %s); group the merged stream so it is repartitioned", ErrTopology, s.name, strings.TrimPrefix(o, "\x00"), src.source.topic)
			}
			owner[s] = sourceKey(src)
			s.owner = sourceKey(src)
		}
		slices.SortFunc(tp.owned[src], func(a, c *storeSpec) int { return a.id - c.id })
	}
	for _, s := range b.stores {
		if _, ok := owner[s]; !ok {
			return nil, fmt.Errorf("%w: store %s is not reachable from any source", ErrTopology, s.name)
		}
		tp.stores = append(tp.stores, s)
	}
	slices.SortFunc(tp.stores, func(a, c *storeSpec) int { return a.id - c.id })
	// Repartition topics need an upstream to size them; a cycle through
	// repartition topics cannot be built with this DSL.
	for _, src := range tp.sources {
		if src.source.internal && len(tp.upstream[sourceKey(src)]) == 0 {
			return nil, fmt.Errorf("%w: repartition topic %s has no writer", ErrTopology, src.source.topic)
		}
	}
	return tp, nil
}

// partitionCounts completes counts (external topics, by topic name) with
// the partition count of every repartition topic: the largest among the
// sources that write it. It returns counts by source key.
func (tp *Topology) partitionCounts(external map[string]int32) (map[string]int32, error) {
	out := make(map[string]int32)
	var resolve func(key string, depth int) (int32, error)
	resolve = func(key string, depth int) (int32, error) {
		if n, ok := out[key]; ok {
			return n, nil
		}
		if !strings.HasPrefix(key, "\x00") {
			n, ok := external[key]
			if !ok || n <= 0 {
				return 0, fmt.Errorf("%w: input topic %s does not exist", ErrConfig, key)
			}
			out[key] = n
			return n, nil
		}
		if depth > len(tp.sources) {
			return 0, fmt.Errorf("%w: repartition cycle at %s", ErrTopology, key[1:])
		}
		var m int32
		for _, up := range tp.upstream[key] {
			n, err := resolve(up, depth+1)
			if err != nil {
				return 0, err
			}
			m = max(m, n)
		}
		out[key] = m
		return m, nil
	}
	for _, src := range tp.sources {
		if _, err := resolve(sourceKey(src), 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newTask instantiates the nodes reachable from src for one partition.
func (tp *Topology) newTask(appID string, src *node, p int32) *task {
	t := &task{
		topo: tp, appID: appID, src: src, topic: topicName(appID, src), partition: p,
		built: make(map[*node]func(rec)), next: -1, streamTime: -1 << 62,
	}
	t.id = taskID(t.topic, p)
	t.srcID = sourceID(t.topic, p)
	t.root = t.build(src)
	return t
}

// String lists the topology: sources, operators, sinks and stores.
func (tp *Topology) String() string {
	var sb strings.Builder
	for _, src := range tp.sources {
		fmt.Fprintf(&sb, "source %s\n", src.source.topic)
		seen := make(map[*node]bool)
		var walk func(n *node, depth int)
		walk = func(n *node, depth int) {
			if seen[n] {
				return
			}
			seen[n] = true
			for _, c := range n.children {
				fmt.Fprintf(&sb, "%s-> %s\n", strings.Repeat("  ", depth), c.name)
				walk(c, depth+1)
			}
		}
		walk(src, 1)
	}
	for _, s := range tp.stores {
		fmt.Fprintf(&sb, "store %s (changelog <app>-%s-changelog)\n", s.name, s.name)
	}
	return sb.String()
}
