package console

import (
	"errors"
	"html/template"
	"net/http"
	"strings"
)

type pipelinesData struct {
	Graph      template.HTML
	Files      string
	Worker     string
	Components []pipelineRow
	Edges      []pipelineEdgeRow
	Failed     int
	// Restarted names the component a restart was asked of (the
	// redirect after the POST).
	Restarted string
}

type pipelineRow struct {
	PipelineComponent
	In, Out, LagText string
	StateClass       string
}

type pipelineEdgeRow struct {
	PipelineEdge
	RateText string
}

// pipelinesPage: the graph of weir run's pipelines with live rates on
// every edge and box, then the same figures as tables: each component's
// state, rates, totals, lag, last error and a restart button (not in
// read-only mode), and each edge's rate, errors and dead letters.
func (c *Console) pipelinesPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	g, err := c.cfg.Pipelines.Graph(ctx)
	d := pipelinesData{Files: strings.Join(g.Files, " "), Worker: g.Worker}
	if err != nil {
		c.render(w, r, "pipelines", "Pipelines", d, err)
		return
	}
	d.Graph = graphSVG(g)
	if n := r.URL.Query().Get("restarted"); n != "" {
		for _, pc := range g.Components {
			if pc.Name == n {
				d.Restarted = n
			}
		}
	}
	for _, pc := range g.Components {
		if pc.Block == "topic" {
			continue
		}
		row := pipelineRow{PipelineComponent: pc, In: fmtRate(pc.InRate), Out: fmtRate(pc.OutRate), LagText: "–"}
		if pc.Lag >= 0 {
			row.LagText = fmtInt(pc.Lag)
		}
		switch pc.State {
		case "running":
			row.StateClass = "ok"
		case "failed":
			row.StateClass = "bad"
			d.Failed++
		default:
			row.StateClass = "warn"
		}
		d.Components = append(d.Components, row)
	}
	for _, e := range g.Edges {
		d.Edges = append(d.Edges, pipelineEdgeRow{PipelineEdge: e, RateText: fmtRate(e.Rate)})
	}
	c.render(w, r, "pipelines", "Pipelines", d, nil)
}

// restartComponent restarts one component (POST from the page's
// button), then shows the page again.
func (c *Console) restartComponent(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	name := r.PathValue("component")
	err := c.cfg.Pipelines.Restart(ctx, name)
	switch {
	case errors.Is(err, ErrNoComponent):
		c.notFound(w, r, "Pipelines", err.Error())
	case err != nil:
		c.render(w, r, "pipelines", "Pipelines", pipelinesData{}, err)
	default:
		http.Redirect(w, r, "/console/pipelines?restarted="+template.URLQueryEscaper(name), http.StatusSeeOther)
	}
}
