package tracebench

import (
	"math"
	"testing"
)

func TestCeiling(t *testing.T) {
	share := func(milli int) TracePod { return TracePod{Name: "s", Num: 1, Milli: milli, CPUMilli: 1000} }
	whole := func(num int) TracePod { return TracePod{Name: "w", Num: num, Milli: 1000, CPUMilli: 1000} }
	cpu := TracePod{Name: "c", CPUMilli: 1000}
	cases := []struct {
		name     string
		arrivals []TracePod
		placed   string // per arrival: + placed by the run, - failed
		cards    int64
		want     float64
	}{
		{"two halves fill a card", []TracePod{share(500), share(500)}, "++", 1, 100},
		{"a later 400 may complete the forced 600", []TracePod{share(600), share(400)}, "+-", 1, 100},
		{"nothing completes a lone 600", []TracePod{share(600), cpu}, "++", 1, 60},
		{"a later 160 joins the 810", []TracePod{share(810), share(160)}, "+-", 1, 97},
		{"whole pods take the cards shares leave", []TracePod{whole(1), share(300)}, "++", 2, 65},
		{"cards no pod can use stay idle", []TracePod{whole(1), share(500)}, "++", 3, 50},
		{"later shares and whole pods may fill what the forced shares leave", []TracePod{share(600), share(600), share(400), share(400), whole(1)}, "++---", 3, 100},
		{"with no whole pods, later shares may take the free cards", []TracePod{share(700), share(700), share(300)}, "+--", 2, 85},
		// Room for one share card only (the forced whole pod takes the other): the two
		// forced 500s must share it, and the later 300 has nowhere to go.
		{"forced whole pods leave room for the shares", []TracePod{share(500), whole(1), share(500), share(300)}, "+++-", 2, 100},
		{"a whole pod the run failed to place is not forced", []TracePod{whole(2), share(500), share(500)}, "-++", 2, 50},
		{"forced shares that need more cards than the room still count", []TracePod{share(600), share(600), whole(1), share(100)}, "+++-", 3, (600 + 600 + 1000 + 100) / 30.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			placed := make([]bool, len(tc.arrivals))
			for i, c := range tc.placed {
				placed[i] = c == '+'
			}
			if got := ceiling(tc.arrivals, placed, 1000*tc.cards); math.Abs(got-tc.want) > 1e-6 {
				t.Fatalf("ceiling = %.4f%%, want %.4f%%", got, tc.want)
			}
		})
	}
}
