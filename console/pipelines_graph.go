package console

import (
	"fmt"
	"html"
	"html/template"
	"sort"
	"strings"
)

// The pipelines page's graph, drawn on the server as inline SVG (no
// script, no library): nodes in columns by their longest path from a
// source (sources, topics, streams, their topics, sinks), ordered in
// each column by the mean row of their inputs to keep edges short;
// every edge labelled with its rate and, when there are any, its errors
// and dead letters.

const (
	nodeW, nodeH   = 184, 58
	colGap, rowGap = 52, 18
	margin         = 8
	nameMax        = 23 // characters of a name shown in a box
)

type placed struct {
	c        PipelineComponent
	col, row int
	x, y     int
}

// graphSVG draws g.
func graphSVG(g PipelineGraph) template.HTML {
	nodes := map[string]*placed{}
	var order []string
	for _, c := range g.Components {
		if _, ok := nodes[c.Name]; !ok {
			nodes[c.Name] = &placed{c: c}
			order = append(order, c.Name)
		}
	}
	preds := map[string][]string{}
	for _, e := range g.Edges {
		for _, n := range []string{e.From, e.To} {
			if _, ok := nodes[n]; !ok { // an edge to a node the graph does not list
				nodes[n] = &placed{c: PipelineComponent{Name: n, Block: strings.SplitN(n, ".", 2)[0]}}
				order = append(order, n)
			}
		}
		preds[e.To] = append(preds[e.To], e.From)
	}
	// Longest path from a node without inputs (the graph has no cycles:
	// weir validate refuses them; depth bounds the walk anyway).
	rank := map[string]int{}
	var rankOf func(n string, depth int) int
	rankOf = func(n string, depth int) int {
		if r, ok := rank[n]; ok {
			return r
		}
		r := 0
		if depth < len(nodes) {
			for _, p := range preds[n] {
				r = max(r, rankOf(p, depth+1)+1)
			}
		}
		rank[n] = r
		return r
	}
	cols := [][]*placed{}
	sort.Strings(order)
	for _, n := range order {
		r := rankOf(n, 0)
		for len(cols) <= r {
			cols = append(cols, nil)
		}
		nodes[n].col = r
		cols[r] = append(cols[r], nodes[n])
	}
	for ci, col := range cols {
		if ci > 0 {
			bary := func(p *placed) float64 {
				ps := preds[p.c.Name]
				if len(ps) == 0 {
					return 0
				}
				s := 0.0
				for _, q := range ps {
					s += float64(nodes[q].row)
				}
				return s / float64(len(ps))
			}
			sort.SliceStable(col, func(i, j int) bool { return bary(col[i]) < bary(col[j]) })
		}
		for i, p := range col {
			p.row = i
			p.x = margin + ci*(nodeW+colGap)
			p.y = margin + i*(nodeH+rowGap)
		}
	}
	rows := 0
	for _, col := range cols {
		rows = max(rows, len(col))
	}
	w := 2*margin + len(cols)*nodeW + max(0, len(cols)-1)*colGap
	h := 2*margin + rows*nodeH + max(0, rows-1)*rowGap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="pipeline" id="pipeline-graph" role="img" aria-labelledby="pipeline-graph-title" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h)
	fmt.Fprintf(&b, `<title id="pipeline-graph-title">Pipeline graph: %d components and topics, %d edges; the tables below list the same figures</title>`, len(nodes), len(g.Edges))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#4a4f57"/></marker></defs>`)
	for _, e := range g.Edges {
		f, t := nodes[e.From], nodes[e.To]
		x1, y1 := f.x+nodeW, f.y+nodeH/2
		x2, y2 := t.x, t.y+nodeH/2
		if t.col <= f.col { // never drawn so; keep the arrow visible anyway
			x2 = t.x + nodeW/2
		}
		mx := (x1 + x2) / 2
		cls := "edge"
		if e.Errors > 0 || e.DeadLetters > 0 {
			cls += " edge-bad"
		}
		fmt.Fprintf(&b, `<path class="%s" d="M%d,%d C%d,%d %d,%d %d,%d" marker-end="url(#arrow)"/>`, cls, x1, y1, mx, y1, mx, y2, x2, y2)
		label := fmtRate(e.Rate)
		if e.Shared {
			label += " (total)"
		}
		var bad []string
		if e.Errors > 0 {
			bad = append(bad, fmt.Sprintf("%s err", fmtInt(e.Errors)))
		}
		if e.DeadLetters > 0 {
			bad = append(bad, fmt.Sprintf("%s DLQ", fmtInt(e.DeadLetters)))
		}
		ly := (y1+y2)/2 - 4
		fmt.Fprintf(&b, `<text class="edge-label" x="%d" y="%d" text-anchor="middle">%s</text>`, mx, ly, html.EscapeString(label))
		if len(bad) > 0 {
			fmt.Fprintf(&b, `<text class="edge-label edge-label-bad" x="%d" y="%d" text-anchor="middle">%s</text>`, mx, ly+13, html.EscapeString(strings.Join(bad, " · ")))
		}
	}
	for _, n := range order {
		p := nodes[n]
		c := p.c
		cls := "node node-" + c.Block
		switch c.State {
		case "failed":
			cls += " node-failed"
		case "stopped", "elsewhere", "starting", "restarting":
			cls += " node-idle"
		}
		fmt.Fprintf(&b, `<g class="%s"><title>%s</title>`, cls, html.EscapeString(nodeTitle(c)))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`, p.x, p.y, nodeW, nodeH)
		fmt.Fprintf(&b, `<text class="node-name" x="%d" y="%d">%s</text>`, p.x+8, p.y+20, html.EscapeString(clipName(c.Name)))
		fmt.Fprintf(&b, `<text class="node-info" x="%d" y="%d">%s</text>`, p.x+8, p.y+38, html.EscapeString(nodeLine(c)))
		if c.Block != "topic" {
			fmt.Fprintf(&b, `<text class="node-info" x="%d" y="%d">%s</text>`, p.x+8, p.y+52, html.EscapeString(
				"in "+fmtRate(c.InRate)+" · out "+fmtRate(c.OutRate)))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func clipName(s string) string {
	if r := []rune(s); len(r) > nameMax {
		return string(r[:nameMax-1]) + "…"
	}
	return s
}

// nodeLine is a box's second line: what it is and its state.
func nodeLine(c PipelineComponent) string {
	if c.Block == "topic" {
		return "topic"
	}
	s := c.Block
	if c.Kind != "" {
		s = c.Kind + " " + c.Block
	}
	if c.State != "" {
		s += " · " + c.State
	}
	return s
}

func nodeTitle(c PipelineComponent) string {
	t := c.Name + " (" + nodeLine(c) + ")"
	if c.LastError != "" {
		t += ": last error: " + c.LastError
	}
	return t
}

// fmtRate renders records/s: "0/s", "0.4/s", "12/s", "1.2k/s".
func fmtRate(v float64) string {
	switch {
	case v <= 0:
		return "0/s"
	case v < 10:
		return fmt.Sprintf("%.1f/s", v)
	case v < 1000:
		return fmt.Sprintf("%.0f/s", v)
	case v < 1e6:
		return fmt.Sprintf("%.1fk/s", v/1e3)
	}
	return fmt.Sprintf("%.1fM/s", v/1e6)
}
