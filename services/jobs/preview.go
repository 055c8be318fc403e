package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

// Placements says where a job would start now: services/dispatch.
type Placements interface {
	Preview(ctx context.Context, job models.Job) (dispatch.PlacementPreview, error)
}

// Prices reads the rate cards: services/accounting.
type Prices interface {
	PriceList(ctx context.Context, at time.Time) (*accounting.PriceList, error)
}

// History recommends a profile from earlier runs: services/telemetry.
type History interface {
	RecommendProfile(ctx context.Context, job *models.Job, shapes []advice.Shape, opt advice.RecommendOptions) (advice.Recommendation, bool, error)
}

// PreviewDeps are what a preview asks; a nil one leaves its part of the preview out
// (a server without the scheduler cannot say where a job would start).
type PreviewDeps struct {
	Placements Placements
	Prices     Prices
	History    History
	Now        func() time.Time
}

// Previewer tells a submitter, before they submit, what a job would cost per hour,
// whether it would start now (and if not, why), and what earlier runs recommend.
type Previewer struct {
	jobs *Service
	deps PreviewDeps
}

// NewPreviewer returns a Previewer of the jobs s would submit.
func NewPreviewer(s *Service, d PreviewDeps) *Previewer {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Previewer{jobs: s, deps: d}
}

// Preview is what a job would do if submitted now.
type Preview struct {
	// Invalid is the spec's first problem, exactly as Submit would refuse it; when set,
	// nothing else was worked out.
	Invalid *models.FieldError
	// Placement is the scheduler's answer; nil without a scheduler.
	Placement *dispatch.PlacementPreview
	// Costs is an hour's price on each GPU model the job could get: the one it would
	// start on now, else every model of the fleet that fits it. Nil without prices.
	Costs []ModelCost
	// Recommendation is a cheaper profile that earlier runs say would fit.
	Recommendation *advice.Recommendation
	// Uncertified: the image is a reference outside the catalog, or not certified.
	Uncertified bool
}

// ModelCost is an hour of the job on one GPU model ("" for a job without GPUs).
type ModelCost struct {
	GPUModel string
	accounting.Estimate
}

// Preview works out what spec would do if user submitted it now.
func (p *Previewer) Preview(ctx context.Context, user *models.User, spec Spec) (Preview, error) {
	var out Preview
	j, _, err := p.jobs.build(ctx, user, spec)
	var fe *models.FieldError
	if errors.As(err, &fe) {
		out.Invalid = fe
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("preview job %s: %w", spec.Name, err)
	}
	if out.Uncertified, err = p.uncertified(ctx, j); err != nil {
		return out, fmt.Errorf("preview job %s: %w", spec.Name, err)
	}
	if p.deps.Placements != nil {
		pl, err := p.deps.Placements.Preview(ctx, *j)
		if err != nil {
			return out, err
		}
		out.Placement = &pl
	}
	if p.deps.Prices == nil {
		return out, nil
	}
	prices, err := p.deps.Prices.PriceList(ctx, p.deps.Now())
	if err != nil {
		return out, err
	}
	out.Costs = costs(j, out.Placement, prices)
	if p.deps.History != nil && out.Placement != nil && j.GPUs > 0 {
		rec, ok, err := p.deps.History.RecommendProfile(ctx, j, shapes(out.Placement.Fleet, prices), advice.RecommendOptions{})
		if err != nil {
			return out, err
		}
		if ok {
			out.Recommendation = &rec
		}
	}
	return out, nil
}

// uncertified reports whether j's image is not a certified catalog entry.
func (p *Previewer) uncertified(ctx context.Context, j *models.Job) (bool, error) {
	if j.ImageID == nil {
		return j.ImageRef != "", nil
	}
	img, err := p.jobs.store.ImageByID(ctx, *j.ImageID)
	if err != nil {
		return false, err
	}
	return img.Status != models.ImageCertified && !img.Builtin, nil
}

// costs prices an hour of j on the GPU models it would start on, else on every model
// of the fleet that could hold it.
func costs(j *models.Job, pl *dispatch.PlacementPreview, prices *accounting.PriceList) []ModelCost {
	if j.GPUs == 0 {
		return []ModelCost{{Estimate: prices.Hourly(running(j, ""))}}
	}
	var candidates []string
	switch {
	case pl != nil && pl.Placed:
		candidates = pl.GPUModels
	case pl != nil:
		for _, k := range pl.Fleet {
			if fits(j, k) && !slices.Contains(candidates, k.Model) {
				candidates = append(candidates, k.Model)
			}
		}
	default:
		candidates = modelsOf(j.GPUModel)
	}
	out := make([]ModelCost, 0, len(candidates))
	for _, m := range candidates {
		out = append(out, ModelCost{GPUModel: m, Estimate: prices.Hourly(running(j, m))})
	}
	slices.SortStableFunc(out, func(a, b ModelCost) int { return cmp.Compare(a.PerHourMicros, b.PerHourMicros) })
	return out
}

// running is what j holds while it runs on GPUs of model.
func running(j *models.Job, model string) accounting.Running {
	n := int64(max(j.Replicas, 1))
	r := accounting.Running{GPUModel: model, CPUMilli: j.CPUMilli * n, MemoryMiB: j.MemoryMiB * n, ScratchMiB: j.ScratchMiB * n, Replicas: n, ImageID: j.ImageID}
	switch {
	case j.MIGProfile != "":
		r.MIGSlices = int64(migSlices(j.MIGProfile)) * n
	case j.GPUMilli > 0:
		r.GPUMilli = int64(j.GPUMilli) * n
	default:
		r.GPUMilli = int64(j.GPUs) * 1000 * n
	}
	return r
}

// fits reports whether a GPU of kind k could serve j: the model it names, with the
// memory or the MIG profile it asks for.
func fits(j *models.Job, k dispatch.GPUKind) bool {
	if names := modelsOf(j.GPUModel); len(names) > 0 && !slices.Contains(names, k.Model) {
		return false
	}
	if j.MIGProfile != "" {
		return slices.ContainsFunc(k.MIGProfiles, func(m dispatch.MIGKind) bool { return m.Profile == j.MIGProfile })
	}
	return k.MemoryMiB >= j.GPUMemoryMiB
}

func modelsOf(s string) []string {
	var out []string
	for _, m := range strings.Split(s, "|") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// migSlices is the compute slices of a MIG profile: 3 for "3g.40gb".
func migSlices(profile string) int {
	g, _, _ := strings.Cut(profile, "g.")
	n, _ := strconv.Atoi(g)
	return n
}

// shareSizes are the shares of a card a recommendation may offer besides the whole card.
var shareSizes = []int{500, 250}

// shapes are what one may ask of the fleet's GPUs, priced: each kind whole, in halves
// and quarters, and its configured MIG profiles. Kinds without a price are left out.
func shapes(fleet []dispatch.GPUKind, prices *accounting.PriceList) []advice.Shape {
	var out []advice.Shape
	for _, k := range fleet {
		price, ok := prices.GPUHour(k.Model)
		if !ok {
			continue
		}
		out = append(out, advice.Shape{Model: k.Model, Milli: 1000, MemoryMiB: k.MemoryMiB, PricePerHourMicros: price})
		for _, milli := range shareSizes {
			out = append(out, advice.Shape{Model: k.Model, Milli: milli, MemoryMiB: k.MemoryMiB * int64(milli) / 1000, PricePerHourMicros: price * int64(milli) / 1000})
		}
		for _, m := range k.MIGProfiles {
			out = append(out, advice.Shape{Model: k.Model, MIGProfile: m.Profile, MemoryMiB: m.MemoryMiB, PricePerHourMicros: price * int64(migSlices(m.Profile)) / 7})
		}
	}
	return out
}
