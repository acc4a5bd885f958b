package console

import (
	"fmt"
	"hash/fnv"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Point is one sample of a series.
type Point struct {
	T time.Time
	V float64
}

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []Point // in time order
}

// Chart is a line chart over time, drawn as inline SVG on the server
// (no script, no external asset). The SVG is an image with the title as
// its accessible name and each series' latest value as its description,
// followed by a legend in HTML.
type Chart struct {
	Title  string // caption and accessible name
	Unit   string // of the y axis, e.g. "records/s"
	Series []Series
	// Empty is said instead of a chart when no series has a point
	// (default "No samples yet.").
	Empty         string
	Width, Height int // of the viewBox; 0: 720×220
}

// chartColors have at least 4.5:1 contrast on white (text and lines).
var chartColors = []string{"#0b57d0", "#a4161a", "#1b6b2f", "#7a4a00", "#6d28d9", "#0e6a80", "#9d174d", "#374151"}

// SVG renders the chart as a <figure> holding the SVG and its legend.
func (ch Chart) SVG() template.HTML {
	w, h := ch.Width, ch.Height
	if w <= 0 {
		w = 720
	}
	if h <= 0 {
		h = 220
	}
	hf := fnv.New32a()
	hf.Write([]byte(ch.Title))
	id := fmt.Sprintf("chart-%08x", hf.Sum32())
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<figure class="chart"><figcaption id="%s">%s</figcaption>`, id, esc(ch.Title))
	var t0, t1 time.Time
	maxV := 0.0
	n := 0
	for _, s := range ch.Series {
		for _, p := range s.Points {
			if n == 0 || p.T.Before(t0) {
				t0 = p.T
			}
			if n == 0 || p.T.After(t1) {
				t1 = p.T
			}
			if p.V > maxV && !math.IsInf(p.V, 0) {
				maxV = p.V
			}
			n++
		}
	}
	if n == 0 {
		empty := ch.Empty
		if empty == "" {
			empty = "No samples yet."
		}
		fmt.Fprintf(&b, `<p class="muted">%s</p></figure>`, esc(empty))
		return template.HTML(b.String())
	}
	top := niceCeil(maxV)
	const left, right, topPad, bottom = 64, 12, 22, 26
	pw, ph := float64(w-left-right), float64(h-topPad-bottom)
	span := t1.Sub(t0).Seconds()
	x := func(t time.Time) float64 {
		if span <= 0 {
			return float64(left) + pw
		}
		return float64(left) + pw*t.Sub(t0).Seconds()/span
	}
	y := func(v float64) float64 { return float64(topPad) + ph - ph*v/top }
	var desc []string
	for _, s := range ch.Series {
		if len(s.Points) > 0 {
			desc = append(desc, fmt.Sprintf("%s: %s %s at %s", s.Name, fmtFloat(s.Points[len(s.Points)-1].V), ch.Unit, s.Points[len(s.Points)-1].T.UTC().Format("15:04:05")))
		}
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="%s %s-desc" xmlns="http://www.w3.org/2000/svg">`, w, h, id, id)
	fmt.Fprintf(&b, `<desc id="%s-desc">Latest: %s</desc>`, id, esc(strings.Join(desc, "; ")))
	// grid and y labels
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		yy := y(v)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c9ced6" stroke-width="1"/>`, left, w-right, yy, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#1a1a1a">%s</text>`, left-6, yy+4, esc(fmtFloat(v)))
	}
	fmt.Fprintf(&b, `<text x="4" y="12" font-size="11" fill="#1a1a1a">%s</text>`, esc(ch.Unit))
	// x labels: start and end times
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#1a1a1a">%s</text>`, left, h-8, t0.UTC().Format("15:04:05"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#1a1a1a">%s UTC</text>`, w-right, h-8, t1.UTC().Format("15:04:05"))
	for i, s := range ch.Series {
		if len(s.Points) == 0 {
			continue
		}
		col := chartColors[i%len(chartColors)]
		if len(s.Points) == 1 {
			p := s.Points[0]
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, x(p.T), y(p.V), col)
			continue
		}
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, strconv.FormatFloat(x(p.T), 'f', 1, 64)+","+strconv.FormatFloat(y(p.V), 'f', 1, 64))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(pts, " "))
	}
	b.WriteString(`</svg><ul class="legend">`)
	for i, s := range ch.Series {
		last := "—"
		if len(s.Points) > 0 {
			last = fmtFloat(s.Points[len(s.Points)-1].V) + " " + ch.Unit
		}
		fmt.Fprintf(&b, `<li><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" rx="2" fill="%s"/></svg>%s: %s</li>`, chartColors[i%len(chartColors)], esc(s.Name), esc(last))
	}
	b.WriteString(`</ul></figure>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtFloat(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmtInt(int64(v))
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
