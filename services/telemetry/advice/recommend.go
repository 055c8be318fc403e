package advice

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Run is what one earlier run of a similar job measured.
type Run struct {
	JobID int64
	// Model is the GPU model it ran on, e.g. "A100-80GB".
	Model string
	// ActiveGPUs is how many of its GPUs it used (1 for a fraction or MIG slice).
	ActiveGPUs int
	// PeakMemoryMiB is the most GPU memory it held on any one GPU.
	PeakMemoryMiB int64
	// PeakUtilPct is its highest 1-minute mean utilisation of any one GPU; for a
	// fraction or a MIG slice, the utilisation of the whole GPU it ran on.
	PeakUtilPct float64
}

// Shape is a GPU allocation one can ask for, with its price per GPU-hour.
type Shape struct {
	Model string
	// Milli is the share of one GPU (1000: the whole GPU); 0 for a MIG slice.
	Milli int
	// MIGProfile names a MIG slice, e.g. "3g.20gb".
	MIGProfile string
	// MemoryMiB is the GPU memory the shape gives.
	MemoryMiB int64
	// PricePerHourMicros is the price of one such shape for an hour, in micro-units.
	PricePerHourMicros int64
}

// Request is the GPU part of what a job asks for.
type Request struct {
	Model      string // empty: any
	GPUs       int
	Milli      int // a share below 1000, or 0/1000 for whole GPUs
	MIGProfile string
}

// Recommendation is a cheaper profile that earlier runs say would fit.
type Recommendation struct {
	Shape Shape
	GPUs  int
	// Runs is how many earlier runs it rests on.
	Runs                                int
	CurrentPerHourMicros, PerHourMicros int64
	SavingPct                           float64
	// Evidence is the sentence to show, e.g. "8 earlier runs peaked at 19.2 GiB and
	// 41% utilisation: a 0.5 share of an A100-40GB would fit; saves 62%".
	Evidence string
}

// RecommendOptions tune Recommend; zero fields take DefaultRecommendOptions'.
type RecommendOptions struct {
	// Margin is the headroom over the measured peaks (0.2: 20%).
	Margin float64
	// MinRuns is the least number of earlier runs a recommendation rests on.
	MinRuns int
	// MinSavingPct is the least saving worth recommending.
	MinSavingPct float64
	// Speeds gives each GPU model's compute relative to an A100 (see DefaultSpeeds),
	// to compare utilisation measured on one model with another.
	Speeds map[string]float64
}

// DefaultRecommendOptions are Gantry's defaults.
func DefaultRecommendOptions() RecommendOptions {
	return RecommendOptions{Margin: 0.2, MinRuns: 3, MinSavingPct: 10, Speeds: DefaultSpeeds()}
}

// DefaultSpeeds is each GPU family's dense FP16 tensor throughput relative to an A100,
// from the vendor's data sheets.
func DefaultSpeeds() map[string]float64 {
	return map[string]float64{
		"A100": 1, "H100": 3.17, "H200": 3.17, "L40S": 1.16, "A30": 0.53,
		"A10": 0.4, "L4": 0.39, "V100": 0.4, "T4": 0.21,
	}
}

// speed looks a model key such as "A100-40GB" up by its family.
func (o RecommendOptions) speed(model string) (float64, bool) {
	family, _, _ := strings.Cut(model, "-")
	s, ok := o.Speeds[family]
	return s, ok
}

// computeFraction is the part of its GPU's compute a shape gets: its share, or for a
// MIG slice its compute slices out of seven.
func (s Shape) computeFraction() float64 {
	if s.MIGProfile == "" {
		if s.Milli <= 0 || s.Milli >= 1000 {
			return 1
		}
		return float64(s.Milli) / 1000
	}
	slices := 0
	for _, part := range strings.Split(s.MIGProfile, ".") {
		if n, err := strconv.Atoi(strings.TrimSuffix(part, "g")); err == nil && strings.HasSuffix(part, "g") {
			slices = n
		}
		if n, err := strconv.Atoi(strings.TrimSuffix(part, "c")); err == nil && strings.HasSuffix(part, "c") {
			slices = n // a compute instance smaller than its GPU instance
			break
		}
	}
	return float64(slices) / 7
}

func (s Shape) whole() bool { return s.MIGProfile == "" && (s.Milli <= 0 || s.Milli >= 1000) }

// matches reports whether the shape is what r asks for on model.
func (s Shape) matches(r Request, model string) bool {
	if s.Model != model || s.MIGProfile != r.MIGProfile {
		return false
	}
	if r.MIGProfile != "" {
		return true
	}
	if r.Milli > 0 && r.Milli < 1000 {
		return s.Milli == r.Milli
	}
	return s.whole()
}

// Recommend picks the cheapest shape that earlier runs' peaks, with the margin, would
// fit, when it saves enough over what req costs. ok is false when there are too few
// runs, no price for the request, or nothing cheaper fits.
func Recommend(req Request, runs []Run, shapes []Shape, opt RecommendOptions) (Recommendation, bool) {
	def := DefaultRecommendOptions()
	if opt.Margin <= 0 {
		opt.Margin = def.Margin
	}
	if opt.MinRuns <= 0 {
		opt.MinRuns = def.MinRuns
	}
	if opt.MinSavingPct <= 0 {
		opt.MinSavingPct = def.MinSavingPct
	}
	if opt.Speeds == nil {
		opt.Speeds = def.Speeds
	}
	if len(runs) < opt.MinRuns {
		return Recommendation{}, false
	}
	var peakMem int64
	var peakUtil, needCompute float64
	count, models := 1, map[string]int{}
	for _, r := range runs {
		speed, ok := opt.speed(r.Model)
		if !ok {
			return Recommendation{}, false // utilisation on an unknown model compares with nothing
		}
		peakMem = max(peakMem, r.PeakMemoryMiB)
		peakUtil = max(peakUtil, r.PeakUtilPct)
		// Never more than the whole GPU the run had: it did fit there.
		needCompute = max(needCompute, min(r.PeakUtilPct/100*(1+opt.Margin), 1)*speed)
		count = max(count, r.ActiveGPUs)
		models[r.Model]++
	}
	current := req.Model
	if current == "" || strings.Contains(current, "|") {
		current = mostCommon(models)
	}
	gpus := max(req.GPUs, 1)
	var cur *Shape
	for i := range shapes {
		if shapes[i].matches(req, current) {
			cur = &shapes[i]
			break
		}
	}
	if cur == nil {
		return Recommendation{}, false
	}
	curCost := cur.PricePerHourMicros * int64(gpus)
	needMem := int64(math.Ceil(float64(peakMem) * (1 + opt.Margin)))
	var fits []Shape
	for _, s := range shapes {
		speed, ok := opt.speed(s.Model)
		if !ok || s.MemoryMiB < needMem || speed*s.computeFraction() < needCompute || (count > 1 && !s.whole()) {
			continue
		}
		fits = append(fits, s)
	}
	if len(fits) == 0 {
		return Recommendation{}, false
	}
	sort.SliceStable(fits, func(i, j int) bool {
		if fits[i].PricePerHourMicros != fits[j].PricePerHourMicros {
			return fits[i].PricePerHourMicros < fits[j].PricePerHourMicros
		}
		return fits[i].MemoryMiB > fits[j].MemoryMiB
	})
	best := fits[0]
	cost := best.PricePerHourMicros * int64(count)
	if curCost <= 0 || cost >= curCost {
		return Recommendation{}, false
	}
	saving := 100 * float64(curCost-cost) / float64(curCost)
	if saving < opt.MinSavingPct {
		return Recommendation{}, false
	}
	runsWord := "runs"
	if len(runs) == 1 {
		runsWord = "run"
	}
	return Recommendation{
		Shape: best, GPUs: count, Runs: len(runs),
		CurrentPerHourMicros: curCost, PerHourMicros: cost, SavingPct: saving,
		Evidence: fmt.Sprintf("%d earlier %s peaked at %s and %.0f%% utilisation: %s would fit; saves %.0f%%",
			len(runs), runsWord, gib(peakMem), peakUtil, describe(best, count), saving),
	}, true
}

func mostCommon(counts map[string]int) string {
	best := ""
	for k, n := range counts {
		if best == "" || n > counts[best] || (n == counts[best] && k < best) {
			best = k
		}
	}
	return best
}

// describe says a shape in words: "an A100-40GB", "2 × L4-24GB", "a 0.5 share of an
// A100-40GB", "a 3g.20gb MIG slice of an A100-40GB".
func describe(s Shape, count int) string {
	switch {
	case s.MIGProfile != "":
		return fmt.Sprintf("a %s MIG slice of %s %s", s.MIGProfile, article(s.Model), s.Model)
	case !s.whole():
		return fmt.Sprintf("a %s share of %s %s", strconv.FormatFloat(float64(s.Milli)/1000, 'f', -1, 64), article(s.Model), s.Model)
	case count > 1:
		return fmt.Sprintf("%d × %s", count, s.Model)
	}
	return article(s.Model) + " " + s.Model
}

// article is "an" before a model read with a vowel sound ("an A100", "an H100",
// "an L4"), else "a".
func article(model string) string {
	if model != "" && strings.ContainsRune("AEFHILMNORSX", rune(model[0])) {
		return "an"
	}
	return "a"
}
