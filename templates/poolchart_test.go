package templates

import (
	"strings"
	"testing"
	"time"
)

func TestPoolChartSteps(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	c := NewPoolChart([]PoolPoint{{At: t0, Nodes: 0, Booting: 2, Demand: 3}, {At: t0.Add(time.Hour), Nodes: 2, Demand: 0}, {At: t0.Add(2 * time.Hour), Nodes: 1}})
	if c.Peak != 3 || len(c.Lines) != 3 || c.Points != 3 {
		t.Fatalf("chart %+v", c)
	}
	// Steps: each change is drawn at its sample's time, from the previous value.
	nodes := strings.Fields(c.Lines[0].Points)
	if len(nodes) != 5 || nodes[0] != "48.0,220.0" || nodes[2] != "368.0,116.0" || nodes[len(nodes)-1] != "688.0,168.0" {
		t.Fatalf("nodes line %v", nodes)
	}
	if c.YTicks[4].Label != "4" || c.XLabels[0].Label != "09:00" || c.XLabels[4].Label != "11:00" {
		t.Fatalf("axes %+v %+v", c.YTicks, c.XLabels)
	}
	if empty := NewPoolChart(nil); len(empty.Lines) != 0 || empty.YTicks[4].Label != "4" {
		t.Fatalf("empty chart %+v", empty)
	}
}
