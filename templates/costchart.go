package templates

import (
	"fmt"
	"math"
)

// chartPalette colours the series of a cost chart; readable on white, told apart in print.
var chartPalette = []string{"#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#6b7280"}

// CostChart is a stacked bar chart drawn as SVG on the server: one bar per time
// bucket, one colour per series, the axis in the currency's units.
type CostChart struct {
	Width, Height int
	Bars          []ChartBar
	Legend        []ChartSeries
	YTicks        []ChartTick
	XLabels       []ChartTick
	PlotLeft      int
	PlotBottom    int
	PlotRight     int
	Total         int64 // micro-units drawn, the sum of every bar
}

// ChartBar is one segment of a stacked bar.
type ChartBar struct {
	X, Y, W, H string
	Color      string
	Title      string // shown on hover: bucket, series and amount
	Micros     int64
}

// ChartSeries is one entry of the legend.
type ChartSeries struct {
	Name  string
	Color string
}

// ChartTick is a labelled position on an axis.
type ChartTick struct {
	Pos   string
	Label string
}

// NewCostChart lays out amounts[bucket][series] (micro-units) as stacked bars.
func NewCostChart(buckets, series []string, amounts [][]int64) CostChart {
	const width, height, left, right, top, bottom = 720, 300, 72, 12, 12, 40
	c := CostChart{Width: width, Height: height, PlotLeft: left, PlotBottom: height - bottom, PlotRight: width - right}
	for i, s := range series {
		c.Legend = append(c.Legend, ChartSeries{Name: s, Color: chartPalette[i%len(chartPalette)]})
	}
	var peak int64
	for _, row := range amounts {
		var sum int64
		for _, v := range row {
			sum += max(v, 0)
		}
		peak = max(peak, sum)
	}
	step := niceStep(float64(peak) / 4)
	top4 := step * 4
	if top4 <= 0 {
		top4 = 1
	}
	plotH := float64(height - bottom - top)
	scale := plotH / top4
	for i := 0; i <= 4; i++ {
		v := step * float64(i)
		c.YTicks = append(c.YTicks, ChartTick{Pos: fmt.Sprintf("%.1f", float64(height-bottom)-v*scale), Label: money(v)})
	}
	if len(buckets) == 0 {
		return c
	}
	slot := float64(width-left-right) / float64(len(buckets))
	barW := math.Max(1, slot*0.7)
	every := max(1, len(buckets)/12)
	for b, name := range buckets {
		x := float64(left) + slot*float64(b) + (slot-barW)/2
		y := float64(height - bottom)
		for s, v := range amounts[b] {
			if v <= 0 {
				continue
			}
			h := float64(v) * scale
			y -= h
			c.Bars = append(c.Bars, ChartBar{X: fmt.Sprintf("%.1f", x), Y: fmt.Sprintf("%.1f", y), W: fmt.Sprintf("%.1f", barW), H: fmt.Sprintf("%.1f", h),
				Color: chartPalette[s%len(chartPalette)], Title: fmt.Sprintf("%s · %s: %s", name, series[s], money(float64(v))), Micros: v})
			c.Total += v
		}
		if b%every == 0 {
			c.XLabels = append(c.XLabels, ChartTick{Pos: fmt.Sprintf("%.1f", x+barW/2), Label: name})
		}
	}
	return c
}

// niceStep rounds a raw axis step (micro-units) up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 0
	}
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

func money(micros float64) string { return fmt.Sprintf("%.2f", micros/1e6) }
