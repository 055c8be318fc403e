package tracebench

import (
	"math"
	"testing"
)

func TestBinnedMetrics(t *testing.T) {
	// 10 GPUs: one arrive-% point is 100 milli-GPU.
	const gpus, capacity = 10, 10000
	events := []event{
		{arrived: 5000, used: 5000, fragSum: 0},
		{arrived: 9949, used: 9000, fragSum: 500},  // 99.49% → bin 99
		{arrived: 9950, used: 9100, fragSum: 450},  // 99.5% → rounds half to even: 100
		{arrived: 10050, used: 9200, fragSum: 400}, // 100.5% → 100
		{arrived: 10200, used: 9300, fragSum: 350}, // bin 102
	}
	alloc, frag := binned(events, gpus, capacity)
	if got := alloc(100); got != 91.5 {
		t.Fatalf("alloc(100) = %v, want the mean of 91 and 92", got)
	}
	if got := alloc(101); got != round2((91+92+93)/3.0) {
		t.Fatalf("alloc(101) = %v, want the mean over bins 100–102", got)
	}
	if got := frag(100); math.Abs(got-(100*450.0/900+100*400.0/800)/2) > 1e-9 {
		t.Fatalf("frag(100) = %v", got)
	}
	if got := alloc(110); got != 93 {
		t.Fatalf("alloc(110) = %v, want the nearest bin's 93", got)
	}
	if _, frag := binned(nil, gpus, capacity); !math.IsNaN(frag(100)) {
		t.Fatal("no events at all should give NaN")
	}
	if percentile99([]int64{5, 1, 3}) != 5 || percentile99(nil) != 0 {
		t.Fatal("percentile99")
	}
}
