package pipelines

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Graph is the wiring of a configuration: nodes are "source.x",
// "stream.x", "sink.x" and "topic.<name>"; an edge is data flowing from
// one to the other, with the range of the reference that made it.
type Graph struct {
	Nodes []string
	Edges []Edge
}

// Edge is one data flow.
type Edge struct {
	From, To string
	Range    hcl.Range
}

func (l *loader) edge(from, to string, rng hcl.Range) {
	l.edges = append(l.edges, Edge{From: from, To: to, Range: rng})
}

func buildGraph(cfg *Config, edges []Edge) (*Graph, hcl.Diagnostics) {
	g := &Graph{}
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			g.Nodes = append(g.Nodes, n)
		}
	}
	for _, t := range cfg.Topics {
		add("topic." + t.Name)
	}
	for _, c := range cfg.Components() {
		add(c.ID())
	}
	dup := map[[2]string]bool{}
	for _, e := range edges {
		add(e.From)
		add(e.To)
		if !dup[[2]string{e.From, e.To}] {
			dup[[2]string{e.From, e.To}] = true
			g.Edges = append(g.Edges, e)
		}
	}
	return g, g.cycles()
}

// cycles reports every elementary cycle found by a depth-first search
// (each once), at the reference that closes it.
func (g *Graph) cycles() hcl.Diagnostics {
	out := map[string][]Edge{}
	for _, e := range g.Edges {
		out[e.From] = append(out[e.From], e)
	}
	state := map[string]int{}
	var stack []Edge
	var diags hcl.Diagnostics
	reported := map[string]bool{}
	var visit func(n string)
	visit = func(n string) {
		state[n] = 1
		for _, e := range out[n] {
			switch state[e.To] {
			case 0:
				stack = append(stack, e)
				visit(e.To)
				stack = stack[:len(stack)-1]
			case 1:
				// e closes a cycle: from e.To along the stack back to n.
				path := []string{e.To}
				i := len(stack) - 1
				for ; i >= 0 && stack[i].To != e.To; i-- {
				}
				start := i + 1
				if i < 0 {
					start = 0
				}
				for _, se := range stack[start:] {
					path = append(path, se.To)
				}
				path = append(path, e.To)
				members := append([]string(nil), path[:len(path)-1]...)
				sort.Strings(members)
				key := strings.Join(members, ",")
				if reported[key] {
					continue
				}
				reported[key] = true
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cycle in the pipeline graph",
					Detail:  fmt.Sprintf("Records would flow in a loop: %s. Write to a different topic.", strings.Join(path, " → ")),
					Subject: e.Range.Ptr()})
			}
		}
		state[n] = 2
	}
	for _, n := range g.Nodes {
		if state[n] == 0 {
			visit(n)
		}
	}
	return diags
}

// DOT renders the graph for Graphviz: sources → topics → streams → sinks.
func (g *Graph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph weir {\n  rankdir=LR;\n  node [fontname=\"Helvetica\"];\n")
	for _, n := range g.Nodes {
		typ, _, _ := strings.Cut(n, ".")
		shape := map[string]string{"topic": "cylinder", "source": "box", "sink": "box", "stream": "component"}[typ]
		if shape == "" {
			shape = "ellipse"
		}
		fmt.Fprintf(&b, "  %s [shape=%s];\n", strconv.Quote(n), shape)
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", strconv.Quote(e.From), strconv.Quote(e.To))
	}
	b.WriteString("}\n")
	return b.String()
}
