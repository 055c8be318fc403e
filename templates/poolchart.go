package templates

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// PoolPoint is one sample of a pool: nodes in service, machines booting, waiting jobs.
type PoolPoint struct {
	At                     time.Time
	Nodes, Booting, Demand int
}

// PoolChart is a step chart drawn as SVG on the server: nodes in service, nodes
// booting and waiting jobs over time, each line in its own colour and dash pattern so
// that colour is never the only signal.
type PoolChart struct {
	Width, Height, PlotLeft, PlotRight, PlotTop, PlotBottom int
	Lines                                                   []ChartLine
	YTicks, XLabels                                         []ChartTick
	// Peak is the largest value drawn, Points the samples.
	Peak, Points int
}

// ChartLine is one series of a line chart.
type ChartLine struct {
	Name, Color, Dash, Points string
}

// NewPoolChart lays out samples (oldest first) as step lines.
func NewPoolChart(samples []PoolPoint) PoolChart {
	const width, height, left, right, top, bottom = 720, 260, 48, 32, 12, 40
	c := PoolChart{Width: width, Height: height, PlotLeft: left, PlotRight: width - right, PlotTop: top, PlotBottom: height - bottom, Points: len(samples)}
	for _, s := range samples {
		c.Peak = max(c.Peak, s.Nodes+s.Booting, s.Demand)
	}
	step := max(1, int(math.Ceil(float64(c.Peak)/4)))
	ceiling := step * 4
	scaleY := float64(height-bottom-top) / float64(ceiling)
	for i := 0; i <= 4; i++ {
		c.YTicks = append(c.YTicks, ChartTick{Pos: fmt.Sprintf("%.1f", float64(height-bottom)-float64(i*step)*scaleY), Label: itoa(i * step)})
	}
	if len(samples) == 0 {
		return c
	}
	from, to := samples[0].At, samples[len(samples)-1].At
	span := to.Sub(from)
	if span <= 0 {
		span = time.Minute
	}
	x := func(t time.Time) float64 {
		return float64(left) + float64(width-left-right)*float64(t.Sub(from))/float64(span)
	}
	y := func(v int) float64 { return float64(height-bottom) - float64(v)*scaleY }
	series := []struct {
		name, color, dash string
		value             func(PoolPoint) int
	}{
		{"nodes in service", "#2563eb", "", func(p PoolPoint) int { return p.Nodes }},
		{"nodes incl. booting", "#059669", "6 3", func(p PoolPoint) int { return p.Nodes + p.Booting }},
		{"waiting jobs", "#d97706", "2 3", func(p PoolPoint) int { return p.Demand }},
	}
	for _, s := range series {
		var pts []string
		for i, p := range samples {
			v := y(s.value(p))
			if i > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.At), y(s.value(samples[i-1]))))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.At), v))
		}
		c.Lines = append(c.Lines, ChartLine{Name: s.name, Color: s.color, Dash: s.dash, Points: strings.Join(pts, " ")})
	}
	layout := "15:04"
	if span > 24*time.Hour {
		layout = "Jan 2 15:04"
	}
	for i := 0; i <= 4; i++ {
		t := from.Add(span * time.Duration(i) / 4)
		c.XLabels = append(c.XLabels, ChartTick{Pos: fmt.Sprintf("%.1f", x(t)), Label: t.UTC().Format(layout)})
	}
	return c
}
