package templates

import (
	"strings"
	"testing"
)

// Points land where their values say: the first at the plot's left edge on the
// baseline, the last at its right edge; the Y axis ends at a round number above the
// peak; the legend states peak, mean and last.
func TestLineChartScalesToThePlot(t *testing.T) {
	c := NewLineChart(LineChartSpec{ID: "chart-x", Title: "GPU utilisation", Unit: "%", TimeAxis: true, Series: []LineSeries{
		{Name: "gpu0", Points: []LinePoint{{X: 1000, Y: 0}, {X: 1060, Y: 50}, {X: 1120, Y: 87}}},
		{Name: "gpu1", Points: []LinePoint{{X: 1000, Y: 10}}},
	}, Marks: []ChartMark{{X: 1060, Label: "checkpoint"}, {X: 5000, Label: "off the plot"}}})
	if c.Empty || c.Points != 4 || len(c.Lines) != 2 {
		t.Fatalf("chart = %+v", c)
	}
	pts := strings.Fields(c.Lines[0].Points)
	if len(pts) != 3 || pts[0] != "64.0,204.0" || !strings.HasPrefix(pts[2], "704.0,") {
		t.Fatalf("gpu0 drawn at %v; want from (64, 204) to the right edge 704", pts)
	}
	if top := c.YTicks[len(c.YTicks)-1].Label; top != "100%" || c.YTicks[0].Label != "0%" || c.YTicks[1].Label != "25%" {
		t.Errorf("Y axis %v; want 0%% to 100%% in steps of 25", c.YTicks)
	}
	if c.Lines[0].Summary != "peak 87%, mean 45.7%, last 87%" {
		t.Errorf("summary = %q", c.Lines[0].Summary)
	}
	if c.Lines[0].Dash == c.Lines[1].Dash || c.Lines[0].Color == c.Lines[1].Color {
		t.Error("two lines look alike: colour and dash must both differ")
	}
	if len(c.Marks) != 1 || c.Marks[0].X != "384.0" {
		t.Errorf("marks = %+v; want the checkpoint mid-plot and the other left out", c.Marks)
	}
	if c.XTicks[0].Label != "00:16" {
		t.Errorf("first time label = %q, want the UTC clock time", c.XTicks[0].Label)
	}
}

// A long series is thinned to what the plot can show, keeping its ends; negative
// values take the axis below 0; no points is an empty chart.
func TestLineChartThinsAndHandlesEdges(t *testing.T) {
	var ps []LinePoint
	for i := range 5000 {
		ps = append(ps, LinePoint{X: float64(i), Y: -float64(i % 7)})
	}
	c := NewLineChart(LineChartSpec{ID: "chart-y", Series: []LineSeries{{Name: "s", Points: ps}}})
	drawn := strings.Fields(c.Lines[0].Points)
	if len(drawn) != maxLinePoints || !strings.HasPrefix(drawn[0], "64.0,") || !strings.HasPrefix(drawn[len(drawn)-1], "704.0,") {
		t.Fatalf("drew %d points ending %s; want %d ending at the right edge", len(drawn), drawn[len(drawn)-1], maxLinePoints)
	}
	if c.YTicks[0].Label != "-6" || c.YTicks[len(c.YTicks)-1].Label != "0" || len(c.YTicks) != 4 {
		t.Errorf("Y axis %v; want -6 to 0 in steps of 2", c.YTicks)
	}
	if e := NewLineChart(LineChartSpec{ID: "chart-z", Series: []LineSeries{{Name: "none"}}}); !e.Empty || len(e.Lines) != 0 {
		t.Errorf("no points = %+v, want an empty chart", e)
	}
	one := NewLineChart(LineChartSpec{ID: "chart-1", Series: []LineSeries{{Name: "flat", Points: []LinePoint{{X: 3, Y: 0}}}}})
	if one.Empty || len(one.YTicks) != 5 {
		t.Errorf("a single zero point = %+v; want a drawn chart with an axis", one)
	}
}
