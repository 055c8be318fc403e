package accounting

import (
	"fmt"
	"sort"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// rateKey names one price timeline. Zero pool or image ids stand for "any".
type rateKey struct {
	resource string
	gpuModel string
	poolID   int64
	capacity string
	imageID  int64
}

func keyOf(r models.CostRate) rateKey {
	return rateKey{resource: r.Resource, gpuModel: r.GPUModel, poolID: deref(r.PoolID), capacity: r.CapacityType, imageID: deref(r.ImageID)}
}

func (k rateKey) String() string {
	s := k.resource
	if k.gpuModel != "" {
		s += " " + k.gpuModel
	}
	if k.poolID != 0 {
		s += fmt.Sprintf(" in pool %d", k.poolID)
	}
	if k.capacity != "" {
		s += " (" + k.capacity + ")"
	}
	if k.imageID != 0 {
		s += fmt.Sprintf(" for image %d", k.imageID)
	}
	return s
}

// rateBook answers "what did this cost at time t" from every rate ever set.
type rateBook struct {
	timelines map[rateKey][]models.CostRate // each sorted by effective_from
}

func newRateBook(rates []models.CostRate) rateBook {
	b := rateBook{timelines: map[rateKey][]models.CostRate{}}
	for _, r := range rates {
		r.EffectiveFrom = r.EffectiveFrom.UTC()
		k := keyOf(r)
		b.timelines[k] = append(b.timelines[k], r)
	}
	for _, tl := range b.timelines {
		sort.Slice(tl, func(i, j int) bool { return tl[i].EffectiveFrom.Before(tl[j].EffectiveFrom) })
	}
	return b
}

// candidates lists the keys that may price usage of k, most specific first: a pool's own
// price beats a model's price in any pool, which beats a price by capacity type alone.
func candidates(k rateKey) []rateKey {
	var out []rateKey
	for _, pool := range []int64{k.poolID, 0} {
		for _, model := range []string{k.gpuModel, ""} {
			for _, capacity := range []string{k.capacity, ""} {
				c := rateKey{resource: k.resource, gpuModel: model, poolID: pool, capacity: capacity, imageID: k.imageID}
				out = appendUnique(out, c)
			}
		}
	}
	return out
}

func appendUnique(keys []rateKey, k rateKey) []rateKey {
	for _, have := range keys {
		if have == k {
			return keys
		}
	}
	return append(keys, k)
}

// at returns the rate of the most specific key that has one in effect at t, or nil.
func (b rateBook) at(keys []rateKey, t time.Time) *models.CostRate {
	for _, k := range keys {
		tl := b.timelines[k]
		i := sort.Search(len(tl), func(i int) bool { return tl[i].EffectiveFrom.After(t) })
		if i > 0 {
			return &tl[i-1]
		}
	}
	return nil
}

// ratePiece is a stretch of time with one price (rate nil: no price in effect).
type ratePiece struct {
	from, to time.Time
	rate     *models.CostRate
}

// pieces splits [from, to) where the price of usage keyed k changes.
func (b rateBook) pieces(k rateKey, from, to time.Time) []ratePiece {
	keys := candidates(k)
	cuts := []time.Time{from}
	for _, c := range keys {
		for _, r := range b.timelines[c] {
			if r.EffectiveFrom.After(from) && r.EffectiveFrom.Before(to) {
				cuts = append(cuts, r.EffectiveFrom)
			}
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
	cuts = append(cuts, to)
	var out []ratePiece
	for i := 0; i+1 < len(cuts); i++ {
		if !cuts[i].Before(cuts[i+1]) {
			continue
		}
		rate := b.at(keys, cuts[i])
		if n := len(out); n > 0 && sameRate(out[n-1].rate, rate) {
			out[n-1].to = cuts[i+1]
			continue
		}
		out = append(out, ratePiece{from: cuts[i], to: cuts[i+1], rate: rate})
	}
	return out
}

func sameRate(a, b *models.CostRate) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.ID == b.ID)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
