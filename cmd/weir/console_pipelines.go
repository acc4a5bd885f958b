package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"weir/console"
	"weir/pipelines/observe"
)

// consolePipelines gives the console's pipelines page its data: the
// pipeline API's view (the same counters and rates as weir top).
type consolePipelines struct {
	m      *observe.Meter
	files  []string
	worker string
}

func (c consolePipelines) Graph(context.Context) (console.PipelineGraph, error) {
	v := c.m.View()
	g := console.PipelineGraph{Files: c.files, Worker: c.worker, At: v.Time}
	for _, t := range v.Topics {
		g.Components = append(g.Components, console.PipelineComponent{Name: "topic." + t, Block: "topic", Lag: -1})
	}
	for _, cv := range v.Components {
		pc := console.PipelineComponent{Name: cv.Component.ID, Block: cv.Type, Kind: cv.Kind, State: cv.State,
			LastError: cv.LastError, InRate: cv.Rates.RecordsIn, OutRate: cv.Rates.RecordsOut,
			RecordsIn: int64(cv.RecordsIn), RecordsOut: int64(cv.RecordsOut), Errors: int64(cv.Errors),
			DeadLetters: int64(cv.DeadLetters), Lag: int64(cv.Lag), Restartable: cv.Starts > 0}
		if cv.Type == "stream" && cv.Kind == "stream" {
			pc.Kind = ""
		}
		if cv.LastErrorAt != nil {
			pc.LastErrorAt = *cv.LastErrorAt
		}
		if cv.Type == "source" {
			pc.Lag = -1 // a source's "lag" is records in flight
		}
		if cv.State == "not running" {
			pc.State, pc.Restartable = "elsewhere", false
		}
		g.Components = append(g.Components, pc)
	}
	for _, e := range v.Edges {
		g.Edges = append(g.Edges, console.PipelineEdge{From: e.From, To: e.To, Rate: e.RecordsPerSec,
			Errors: int64(e.Errors), DeadLetters: int64(e.DeadLetters), Shared: e.Shared})
	}
	return g, nil
}

func (c consolePipelines) Restart(ctx context.Context, name string) error {
	if strings.HasPrefix(name, "topic.") {
		return fmt.Errorf("%w: %s is a topic", console.ErrNoComponent, name)
	}
	err := c.m.Pipeline().Restart(ctx, name)
	if errors.Is(err, observe.ErrUnknownComponent) {
		return fmt.Errorf("%w: %v", console.ErrNoComponent, err)
	}
	return err
}
