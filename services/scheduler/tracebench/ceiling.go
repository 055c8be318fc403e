package tracebench

import (
	"maps"
	"slices"
)

// The ceiling bounds what any placement could have reached on a run. Until a run's first
// failed sharing pod, every sharing pod was placed; a placement that places them too, and
// the whole-GPU pods the run placed before that point, must fit those on cards, and may
// add any pod that arrived later. The LP relaxation of packing them (cards as patterns
// of shares, Gilmore and Gomory's cutting-stock LP, with whole-GPU pods filling every
// card the shares leave as far as their demand goes, and CPU, memory and GPU models
// ignored) gives the least GPU such a placement leaves idle. The run's own placement is
// one of them, so its allocation never exceeds its ceiling; the gap between the two is
// what better packing could still win.

// ceilingEps is the tolerance of the simplex and of the pricing step.
const ceilingEps = 1e-9

// ceilingOverflow is the price, in milli-GPU, of a share card beyond the room: far above
// the 1000 any card can leave idle.
const ceilingOverflow = 1e6

// shareDemand counts sharing pods by their milli-GPU: forced must be placed, optional may.
type shareDemand struct {
	sizes            []int
	forced, optional []float64
}

// ceiling returns the highest allocation ratio, in percent of capacity, that a packing of
// the run's arrivals can reach when it places what the run placed (placed[i]) before
// the run's first failed sharing pod.
func ceiling(arrivals []TracePod, placed []bool, capacityMilli int64) float64 {
	cards := float64(capacityMilli) / 1000
	until := len(arrivals)
	for i := range arrivals {
		if arrivals[i].Sharing() && !placed[i] {
			until = i
			break
		}
	}
	count := map[int][2]float64{}
	var wholeForced, wholeAll float64
	for i := range arrivals {
		p := &arrivals[i]
		forced := i < until
		if forced && !placed[i] {
			continue
		}
		switch {
		case p.Sharing():
			c := count[p.Milli]
			if forced {
				c[0]++
			} else {
				c[1]++
			}
			count[p.Milli] = c
		case p.Milli > 0:
			wholeAll += float64(p.Num)
			if forced {
				wholeForced += float64(p.Num)
			}
		}
	}
	var d shareDemand
	for _, s := range slices.Sorted(maps.Keys(count)) {
		d.sizes = append(d.sizes, s)
		d.forced = append(d.forced, count[s][0])
		d.optional = append(d.optional, count[s][1])
	}
	idle := leastIdle(d, cards-wholeForced, cards-wholeAll)
	return 100 * (1 - idle/float64(capacityMilli))
}

// leastIdle solves the LP: choose how many cards hold each pattern of shares so that
// every forced share and no more shares than arrived are placed, at most room cards hold
// shares, and every card beyond uncovered (the cards whole-GPU pods cannot fill) is
// either a share card or idle; minimise the idle milli-GPU. It works on the dual
// (maximise over prices, one constraint per pattern) and generates patterns by knapsack.
func leastIdle(d shareDemand, room, uncovered float64) float64 {
	m := len(d.sizes)
	// Dual variables: u[i] forced, v[i] cap, r room, g cover.
	nv := 2*m + 2
	obj := make([]float64, nv)
	for i := 0; i < m; i++ {
		obj[i] = d.forced[i]
		obj[m+i] = -(d.forced[i] + d.optional[i])
	}
	obj[2*m] = -room
	obj[2*m+1] = max(uncovered, 0)
	// One dual constraint per primal column: a pattern of shares, or an idle card.
	idleCard := make([]float64, nv)
	idleCard[2*m+1] = 1
	// Overflowing the room at a price no packing pays keeps the first patterns, one share
	// per card, feasible until better ones enter.
	overflow := make([]float64, nv)
	overflow[2*m] = 1
	rows := [][]float64{idleCard, overflow}
	bounds := []float64{1000, ceilingOverflow}
	addPattern := func(a []int) {
		row := make([]float64, nv)
		used := 0
		for i, k := range a {
			row[i] = float64(k)
			row[m+i] = -float64(k)
			used += k * d.sizes[i]
		}
		row[2*m] = -1
		row[2*m+1] = 1
		rows = append(rows, row)
		bounds = append(bounds, float64(1000-used))
	}
	for i := range d.sizes {
		a := make([]int, m)
		a[i] = 1
		addPattern(a)
	}
	unit := 1000
	for _, s := range d.sizes {
		unit = gcd(unit, s)
	}
	for {
		y, value := maximize(rows, bounds, obj)
		// A pattern enters when its idle milli-GPU is below what the prices credit it.
		gain := make([]float64, m)
		for i := range gain {
			gain[i] = float64(d.sizes[i]) + y[i] - y[m+i]
		}
		a, best := bestFill(d.sizes, gain, unit)
		if best-y[2*m]+y[2*m+1]-1000 <= ceilingEps*1000 || len(rows) > 100*(m+2) {
			return value
		}
		addPattern(a)
	}
}

// bestFill is the unbounded knapsack over one card: the pattern of the highest total gain.
func bestFill(sizes []int, gain []float64, unit int) ([]int, float64) {
	capacity := 1000 / unit
	best := make([]float64, capacity+1)
	last := make([]int, capacity+1)
	for c := 1; c <= capacity; c++ {
		best[c], last[c] = best[c-1], -1
		for i, s := range sizes {
			if w := s / unit; w <= c && gain[i] > 0 && best[c-w]+gain[i] > best[c]+ceilingEps {
				best[c], last[c] = best[c-w]+gain[i], i
			}
		}
	}
	a := make([]int, len(sizes))
	for c := capacity; c > 0; {
		if i := last[c]; i >= 0 {
			a[i]++
			c -= sizes[i] / unit
		} else {
			c--
		}
	}
	return a, best[capacity]
}

// maximize solves max obj·y subject to rows·y ≤ bounds and y ≥ 0, for bounds ≥ 0, by the
// tableau simplex method with Bland's rule, and returns y and the optimum.
func maximize(rows [][]float64, bounds []float64, obj []float64) ([]float64, float64) {
	nv, nr := len(obj), len(rows)
	width := nv + nr + 1
	t := make([][]float64, nr+1)
	for r := range rows {
		t[r] = make([]float64, width)
		copy(t[r], rows[r])
		t[r][nv+r] = 1
		t[r][width-1] = bounds[r]
	}
	z := make([]float64, width)
	for j, c := range obj {
		z[j] = -c
	}
	t[nr] = z
	basis := make([]int, nr)
	for r := range basis {
		basis[r] = nv + r
	}
	for {
		e := slices.IndexFunc(z[:width-1], func(v float64) bool { return v < -ceilingEps })
		if e < 0 {
			break
		}
		leave := -1
		for r := 0; r < nr; r++ {
			if t[r][e] <= ceilingEps {
				continue
			}
			if leave < 0 {
				leave = r
				continue
			}
			a, b := t[r][width-1]/t[r][e], t[leave][width-1]/t[leave][e]
			if a < b-ceilingEps || (a <= b+ceilingEps && basis[r] < basis[leave]) {
				leave = r
			}
		}
		if leave < 0 {
			break
		}
		p := t[leave][e]
		for j := range t[leave] {
			t[leave][j] /= p
		}
		for r := range t {
			if r == leave || t[r][e] == 0 {
				continue
			}
			f := t[r][e]
			for j := range t[r] {
				t[r][j] -= f * t[leave][j]
			}
		}
		basis[leave] = e
	}
	y := make([]float64, nv)
	for r, b := range basis {
		if b < nv {
			y[b] = t[r][width-1]
		}
	}
	return y, z[width-1]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
