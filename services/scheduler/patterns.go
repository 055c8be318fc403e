package scheduler

import (
	"cmp"
	"slices"
)

// Pattern prices look ahead on the workload's request sizes the way an optimal packer
// would. The cutting-stock LP (Gilmore and Gomory, 1961) packs the expected per-card
// requests into as few cards as possible; its dual prices every request size in cards,
// such that no set of requests that fits on one card is worth more than one card and
// the sets an optimal packing uses are worth exactly one. A card with f milli-GPU free
// can then still earn worth(f), the most that requests fitting in f are priced at.
// A share of size s placed on that card earns its own worth(s) and leaves
// worth(f-s); whatever worth(f) - worth(f-s) - worth(s) is left over is card capacity
// that no optimal packing of the workload would waste this way. Placing each share
// where that loss is least steers cards towards the patterns an optimal offline packing
// would use: on the Alibaba trace, shares that would pair into 940 milli-GPU go instead
// with partners that fill their cards.

// patternIterations bounds the simplex iterations per item size; the LP is degenerate
// and a cap keeps the cost bounded whatever the workload.
const patternIterations = 64

// patternEps is the tolerance on reduced costs and pivots.
const patternEps = 1e-9

// patternSizes is how many of the most demanded request sizes the LP prices; each costs a
// knapsack step per iteration. Sizes beyond it are rare and priced at what fits in them.
const patternSizes = 32

// cardWorth returns worth[f] for f = 0..1000: the most the priced sizes that fit in f
// milli-GPU are worth together, each size usable any number of times.
func cardWorth(sizes []int, prices []float64) []float64 {
	worth := make([]float64, 1001)
	for f := 1; f <= 1000; f++ {
		worth[f] = worth[f-1]
		for i, s := range sizes {
			if s <= f && prices[i] > 0 {
				worth[f] = max(worth[f], worth[f-s]+prices[i])
			}
		}
	}
	return worth
}

// patternPrices returns the dual prices of the cutting-stock LP that packs demand[i]
// items of sizes[i] milli-GPU (1..1000) into cards of 1000: minimise the cards used,
// each item size covered at least its demand. It runs the revised simplex method with
// column generation: a column is one card's pattern (how many items of each size it
// holds) and the pattern to enter is found by an unbounded knapsack over the current
// prices. Prices are in cards and lie in [0, 1].
func patternPrices(sizes []int, demand []float64) []float64 {
	m := len(sizes)
	if m == 0 {
		return nil
	}
	unit := 1000
	for _, s := range sizes {
		unit = gcd(unit, s)
	}
	// The basis starts with one single-size pattern per size, as many items as fit.
	binv := make([][]float64, m)
	x := make([]float64, m)
	cost := make([]float64, m)
	for i := range binv {
		binv[i] = make([]float64, m)
		k := float64(1000 / sizes[i])
		binv[i][i] = 1 / k
		x[i] = demand[i] / k
		cost[i] = 1
	}
	y := make([]float64, m)
	col := make([]float64, m)
	u := make([]float64, m)
	ks := newKnapsack(sizes, unit)
	for it := 0; it < patternIterations*m; it++ {
		for j := range y {
			y[j] = 0
			for k := range cost {
				y[j] += cost[k] * binv[k][j]
			}
		}
		entering := 0.0
		// A surplus column (an item size covered beyond its demand) enters when its price
		// is negative; otherwise the most valuable pattern enters when worth over a card.
		if i := slices.IndexFunc(y, func(v float64) bool { return v < -patternEps }); i >= 0 {
			clear(col)
			col[i] = -1
		} else {
			value := ks.best(y, col)
			if value <= 1+patternEps {
				break
			}
			entering = 1
		}
		for k := range u {
			u[k] = 0
			for j := range col {
				u[k] += binv[k][j] * col[j]
			}
		}
		r := -1
		for k := range u {
			if u[k] > patternEps && (r < 0 || max(x[k], 0)/u[k] < max(x[r], 0)/u[r]-patternEps) {
				r = k
			}
		}
		if r < 0 {
			break
		}
		pivot(binv, x, u, r)
		cost[r] = entering
	}
	prices := make([]float64, m)
	for i, v := range y {
		prices[i] = min(max(v, 0), 1)
	}
	return prices
}

// pivot brings the entering column (u = B⁻¹·column) into the basis at row r.
func pivot(binv [][]float64, x, u []float64, r int) {
	p := u[r]
	theta := x[r] / p
	for j := range binv[r] {
		binv[r][j] /= p
	}
	for k := range binv {
		if k == r || u[k] == 0 {
			continue
		}
		for j := range binv[k] {
			binv[k][j] -= u[k] * binv[r][j]
		}
		x[k] -= u[k] * theta
	}
	x[r] = theta
}

// knapsack finds the pattern of the highest total price that fits one card: an
// unbounded knapsack over the sizes in steps of unit milli-GPU.
type knapsack struct {
	sizes []int
	unit  int
	value []float64
	last  []int
	// priced lists the sizes with a positive price, the only ones worth packing.
	priced []int
}

func newKnapsack(sizes []int, unit int) *knapsack {
	return &knapsack{sizes: sizes, unit: unit, value: make([]float64, 1000/unit+1), last: make([]int, 1000/unit+1)}
}

// best fills out with the pattern (items per size) and returns its total price.
func (k *knapsack) best(prices []float64, out []float64) float64 {
	capacity := len(k.value) - 1
	k.priced = k.priced[:0]
	for i, p := range prices {
		if p > 0 {
			k.priced = append(k.priced, i)
		}
	}
	for c := 1; c <= capacity; c++ {
		k.value[c], k.last[c] = k.value[c-1], -1
		for _, i := range k.priced {
			w := k.sizes[i] / k.unit
			if w <= c && k.value[c-w]+prices[i] > k.value[c]+patternEps {
				k.value[c], k.last[c] = k.value[c-w]+prices[i], i
			}
		}
	}
	clear(out)
	for c := capacity; c > 0; {
		if i := k.last[c]; i >= 0 {
			out[i]++
			c -= k.sizes[i] / k.unit
		} else {
			c--
		}
	}
	return k.value[capacity]
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// workloadWorth prices the per-card request sizes a card class can host and returns the
// class's worth table (see cardWorth), or nil when the class hosts none of the workload.
// Sizes are weighted by the cards they take (a 4-GPU request counts four whole cards);
// only the patternSizes sizes with the most demand are priced, to bound the LP.
func workloadWorth(w Workload, cl gpuClass) []float64 {
	demand := map[int]float64{}
	for _, s := range w {
		if s.GPUs == 0 || s.GPUMilli <= 0 || s.GPUMilli > 1000 || s.Weight <= 0 {
			continue
		}
		if len(s.GPUModels) > 0 && !slices.Contains(s.GPUModels, cl.model) {
			continue
		}
		if s.GPUMemoryMiB > cl.memory {
			continue
		}
		demand[s.GPUMilli] += s.Weight * float64(s.GPUs)
	}
	if len(demand) == 0 {
		return nil
	}
	sizes := make([]int, 0, len(demand))
	for s := range demand {
		sizes = append(sizes, s)
	}
	slices.SortFunc(sizes, func(a, b int) int { return cmp.Or(cmp.Compare(demand[b], demand[a]), cmp.Compare(a, b)) })
	sizes = sizes[:min(len(sizes), patternSizes)]
	d := make([]float64, len(sizes))
	for i, s := range sizes {
		d[i] = demand[s]
	}
	return cardWorth(sizes, patternPrices(sizes, d))
}
