package scheduler

import "math/bits"

// shareStep is the granularity, in milli-GPU, of the capacity index for shares.
const shareStep = 50

// capacityIndex files nodes by free GPU capacity in bitsets, so a placement visits only
// nodes that can hold its GPUs, in node order: whole[k] holds the nodes with at least k
// fully free cards, share[t] those with a card of at least t·shareStep milli free.
type capacityIndex struct {
	whole [][]uint64
	share [1000/shareStep + 1][]uint64
}

func newCapacityIndex(nodes []nodeState) capacityIndex {
	words := (len(nodes) + 63) / 64
	most := 0
	for _, n := range nodes {
		most = max(most, len(n.gpus))
	}
	var x capacityIndex
	x.whole = make([][]uint64, most+1)
	for k := range x.whole {
		x.whole[k] = make([]uint64, words)
	}
	for t := range x.share {
		x.share[t] = make([]uint64, words)
	}
	return x
}

// file records node i's fully free cards and largest free share.
func (x *capacityIndex) file(i, fullFree, maxFree int) {
	w, bit := i/64, uint64(1)<<(uint(i)%64)
	for k := range x.whole {
		if fullFree >= k {
			x.whole[k][w] |= bit
		} else {
			x.whole[k][w] &^= bit
		}
	}
	for t := range x.share {
		if maxFree >= t*shareStep {
			x.share[t][w] |= bit
		} else {
			x.share[t][w] &^= bit
		}
	}
}

// candidates returns the bitset of nodes that may hold the demand's GPUs; nil means any
// node may (no GPUs, or MIG slices, which the index does not track). A demand beyond the
// largest node returns an empty set.
func (x *capacityIndex) candidates(d *demand) []uint64 {
	switch {
	case d.cards == 0 || d.mig != "":
		return nil
	case d.milli < 1000:
		return x.share[d.milli/shareStep]
	case d.cards < len(x.whole):
		return x.whole[d.cards]
	}
	return []uint64{}
}

// next returns the first node at or after i, below end, in the set; end if none.
func next(set []uint64, i, end int) int {
	for i < end && i/64 < len(set) {
		w := set[i/64] >> (uint(i) % 64)
		if w != 0 {
			i += bits.TrailingZeros64(w)
			return min(i, end)
		}
		i = (i/64 + 1) * 64
	}
	return end
}
