package templates

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// lineDashes tell the lines of a chart apart without colour.
var lineDashes = []string{"", "6 3", "2 3", "8 3 2 3", "1 5"}

// maxLinePoints bounds the points drawn per line: more than the plot has pixels
// shows nothing more and weighs the page down.
const maxLinePoints = 600

// LinePoint is one point of a series: X is a time (Unix seconds) or a step.
type LinePoint struct{ X, Y float64 }

// LineSeries is one named line of a chart, its points in X order.
type LineSeries struct {
	Name   string
	Points []LinePoint
}

// LineChartSpec says what a line chart shows and how its axes read.
type LineChartSpec struct {
	// ID names the chart in the page (data-testid and the title's id).
	ID, Title string
	// Unit follows every value: "%", " W", " GiB", or "" for a bare number.
	Unit string
	// TimeAxis: X is Unix seconds, labelled as UTC clock times; else X is a step.
	TimeAxis bool
	Series   []LineSeries
	// Marks are X positions drawn as dashed vertical lines (checkpoints), with what they mark.
	Marks []ChartMark
}

// ChartMark is a vertical marker at X.
type ChartMark struct {
	X     float64
	Label string
}

// LineChart is a line chart drawn as SVG on the server: one polyline per series,
// each with its own colour and dash pattern and a legend entry that says its peak,
// mean and latest value in words.
type LineChart struct {
	ID, Title                                string
	Width, Height                            int
	PlotLeft, PlotRight, PlotTop, PlotBottom int
	Lines                                    []PlotLine
	Marks                                    []DrawnMark
	YTicks, XTicks                           []ChartTick
	Points                                   int // points given, all lines together
	Empty                                    bool
}

// PlotLine is one drawn series.
type PlotLine struct {
	Name, Color, Dash string
	Points            string // the polyline's "x,y x,y …"
	Summary           string // "peak 97%, mean 63%, last 88%"
}

// DrawnMark is a marker placed on the plot.
type DrawnMark struct {
	X, Title string
}

// NewLineChart lays out spec. The Y axis starts at 0 unless a value is negative and
// ends at a round number above the peak; lines of more than maxLinePoints points
// are thinned evenly, keeping the last.
func NewLineChart(spec LineChartSpec) LineChart {
	const width, height, left, right, top, bottom = 720, 240, 64, 16, 12, 36
	c := LineChart{ID: spec.ID, Title: spec.Title, Width: width, Height: height,
		PlotLeft: left, PlotRight: width - right, PlotTop: top, PlotBottom: height - bottom}
	minX, maxX := math.Inf(1), math.Inf(-1)
	minY, maxY := 0.0, 0.0 // the axis always shows 0
	for _, s := range spec.Series {
		for _, p := range s.Points {
			minX, maxX = math.Min(minX, p.X), math.Max(maxX, p.X)
			minY, maxY = math.Min(minY, p.Y), math.Max(maxY, p.Y)
			c.Points++
		}
	}
	if c.Points == 0 {
		c.Empty = true
		return c
	}
	if maxX == minX {
		minX, maxX = minX-1, maxX+1
	}
	lo, hi, step := yRange(minY, maxY)
	plotW, plotH := float64(c.PlotRight-c.PlotLeft), float64(c.PlotBottom-c.PlotTop)
	xPos := func(x float64) float64 { return float64(left) + (x-minX)/(maxX-minX)*plotW }
	yPos := func(y float64) float64 { return float64(c.PlotBottom) - (y-lo)/(hi-lo)*plotH }
	for v := lo; v <= hi+step/2; v += step {
		c.YTicks = append(c.YTicks, ChartTick{Pos: coord(yPos(v)), Label: number(v) + spec.Unit})
	}
	for i := 0; i <= 4; i++ {
		x := minX + (maxX-minX)*float64(i)/4
		label := number(x)
		if spec.TimeAxis {
			label = clockLabel(x, maxX-minX)
		}
		c.XTicks = append(c.XTicks, ChartTick{Pos: coord(xPos(x)), Label: label})
	}
	for i, s := range spec.Series {
		if len(s.Points) == 0 {
			continue
		}
		var b strings.Builder
		for _, p := range thin(s.Points, maxLinePoints) {
			fmt.Fprintf(&b, "%s,%s ", coord(xPos(p.X)), coord(yPos(p.Y)))
		}
		c.Lines = append(c.Lines, PlotLine{Name: s.Name, Color: chartPalette[i%len(chartPalette)], Dash: lineDashes[i%len(lineDashes)],
			Points: strings.TrimSpace(b.String()), Summary: summarise(s.Points, spec.Unit)})
	}
	for _, m := range spec.Marks {
		if m.X < minX || m.X > maxX {
			continue
		}
		c.Marks = append(c.Marks, DrawnMark{X: coord(xPos(m.X)), Title: m.Label})
	}
	return c
}

// yRange is the Y axis: from 0 (or below, for negative values) to the round number
// at or above the peak, in steps of 1, 2, 2.5 or 5 times a power of ten.
func yRange(minY, maxY float64) (lo, hi, step float64) {
	span := maxY - minY
	if span <= 0 {
		span = math.Max(math.Abs(maxY), 1)
	}
	raw := span / 4
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * pow
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	lo = math.Floor(minY/step) * step
	hi = math.Ceil(maxY/step) * step
	if hi <= lo {
		hi = lo + 4*step
	}
	return lo, hi, step
}

// thin keeps at most n points, evenly spaced, always the first and the last.
func thin(ps []LinePoint, n int) []LinePoint {
	if len(ps) <= n {
		return ps
	}
	out := make([]LinePoint, 0, n)
	for i := range n - 1 {
		out = append(out, ps[i*(len(ps)-1)/(n-1)])
	}
	return append(out, ps[len(ps)-1])
}

// summarise says a series' peak, mean and latest value.
func summarise(ps []LinePoint, unit string) string {
	peak, sum := math.Inf(-1), 0.0
	for _, p := range ps {
		peak = math.Max(peak, p.Y)
		sum += p.Y
	}
	return fmt.Sprintf("peak %s%s, mean %s%s, last %s%s", number(peak), unit, number(sum/float64(len(ps))), unit, number(ps[len(ps)-1].Y), unit)
}

// number prints a value with three significant digits, and k or M past ten thousand.
func number(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e7:
		return strconv.FormatFloat(v/1e6, 'f', 0, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case a >= 100 || a == 0:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// clockLabel prints Unix seconds as a UTC time: with the date when the axis spans days.
func clockLabel(sec, span float64) string {
	t := time.Unix(int64(sec), 0).UTC()
	if span > 36*3600 {
		return t.Format("Jan 2 15:04")
	}
	return t.Format("15:04")
}

func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
