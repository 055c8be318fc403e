package quotas

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// Service reads and changes quotas.
type Service struct {
	store *store.Store
	audit *audit.Log
	fleet Fleet
}

// Fleet gives every GPU of the fleet, under whose models a team's use is counted:
// dispatch.Service keeps them between scheduling passes, the store reads them each time.
type Fleet interface {
	FleetGPUs(ctx context.Context) ([]store.FleetGPU, error)
}

// New returns the quota service over st, auditing changes to log, reading the GPUs'
// models from fleet.
func New(st *store.Store, log *audit.Log, fleet Fleet) *Service {
	return &Service{store: st, audit: log, fleet: fleet}
}

// Input is a quota as an admin sets it: GPUs in milli-GPU, CPU in milli-cores, memory in
// MiB (0 CPU or memory: not limited); a nil borrowing limit is unlimited, a nil lending
// limit lends all that is unused.
type Input struct {
	Team     string
	GPUModel string // "" for any model
	models.QuotaLimits
}

var (
	gpusRE   = regexp.MustCompile(`^([0-9]{1,9})(?:\.([0-9]{1,3}))?$`)
	modelRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)
	cohortRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

// maxMilli bounds every figure: a million GPUs or cores, a million GiB.
const maxMilli = 1_000_000_000

// resource is one resource a quota limits, as the form names its fields and the page
// counts it.
type resource struct {
	fields  [3]string          // guarantee, borrowing limit, lending limit
	noun    string             // "" for GPUs, "CPU", "memory"
	unit    string             // what its figures count in messages: "GPUs", "cores", "GiB"
	count   func(int64) string // with its unit: "2.5 GPUs", "16 cores", "8 GiB"
	figure  func(int64) string // without: "2.5"
	of      func(models.Quota) limits
	ofInput func(Input) limits
}

// limits are one resource's guarantee and limits.
type limits struct {
	nominal            int64
	borrowing, lending *int64
}

// resources are the GPU, CPU and memory quotas, in the order of amounts.
var resources = []resource{
	{fields: [3]string{"guaranteed", "borrowing_limit", "lending_limit"}, unit: "GPUs", count: count, figure: GPUs,
		of:      func(q models.Quota) limits { return limits{q.NominalMilli, q.BorrowingLimitMilli, q.LendingLimitMilli} },
		ofInput: func(in Input) limits { return limits{in.NominalMilli, in.BorrowingLimitMilli, in.LendingLimitMilli} }},
	{fields: [3]string{"cpu", "cpu_borrowing_limit", "cpu_lending_limit"}, noun: "CPU", unit: "cores", count: Cores, figure: GPUs,
		of: func(q models.Quota) limits {
			return limits{q.CPUMilli, q.CPUBorrowingLimitMilli, q.CPULendingLimitMilli}
		},
		ofInput: func(in Input) limits { return limits{in.CPUMilli, in.CPUBorrowingLimitMilli, in.CPULendingLimitMilli} }},
	{fields: [3]string{"memory", "memory_borrowing_limit", "memory_lending_limit"}, noun: "memory", unit: "GiB", count: GiB, figure: gib,
		of: func(q models.Quota) limits {
			return limits{q.MemoryMiB, q.MemoryBorrowingLimitMiB, q.MemoryLendingLimitMiB}
		},
		ofInput: func(in Input) limits {
			return limits{in.MemoryMiB, in.MemoryBorrowingLimitMiB, in.MemoryLendingLimitMiB}
		}},
}

// limited reports whether a quota limits the resource: GPUs always, CPU and memory when
// guaranteed any.
func (r resource) limited(l limits) bool { return r.noun == "" || l.nominal > 0 }

func (in Input) validate() error {
	switch {
	case in.GPUModel != "" && !modelRE.MatchString(in.GPUModel):
		return models.Invalid("gpu_model", "%q is not a GPU model name: use the model as nodes report it (A100, H100, L4), or leave it empty for any model", in.GPUModel)
	case in.Cohort != "" && !cohortRE.MatchString(in.Cohort):
		return models.Invalid("cohort", "%q is not a cohort name: use lower-case letters, digits and '-'", in.Cohort)
	}
	for _, r := range resources {
		if err := r.validate(in.Cohort, r.ofInput(in)); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one resource's guarantee and limits.
func (r resource) validate(cohort string, l limits) error {
	none := ""
	if r.noun != "" {
		none = " (0: no " + r.noun + " quota)"
	}
	switch {
	case l.nominal < 0 || l.nominal > maxMilli:
		return models.Invalid(r.fields[0], "must be 0 or more %s%s", r.unit, none)
	case l.borrowing != nil && (*l.borrowing < 0 || *l.borrowing > maxMilli):
		return models.Invalid(r.fields[1], "must be 0 or more %s, or empty for no limit", r.unit)
	case l.lending != nil && (*l.lending < 0 || *l.lending > maxMilli):
		return models.Invalid(r.fields[2], "must be 0 or more %s, or empty to lend all that is unused", r.unit)
	case r.noun != "" && l.nominal == 0 && ((l.borrowing != nil && *l.borrowing > 0) || (l.lending != nil && *l.lending > 0)):
		return models.Invalid(r.fields[0], "set the guaranteed %s first: with 0 the team has no %s quota, so it is not limited and has nothing to borrow or lend", r.unit, r.noun)
	case l.lending != nil && *l.lending > l.nominal:
		return models.Invalid(r.fields[2], "%s is more than the guaranteed %s: a team lends only from its own guarantee", r.count(*l.lending), r.count(l.nominal))
	case cohort == "" && l.borrowing != nil && *l.borrowing > 0:
		return models.Invalid(r.fields[1], "borrowing needs a cohort to borrow from: name the cohort, or set the borrowing limit to 0")
	}
	return nil
}

// Saved is what saving a quota did, and a warning when it is below what the team uses now.
type Saved struct {
	Quota   *models.Quota
	Warning string
}

// Save creates or replaces the team's quota for the model. A borrowing limit beyond what
// the cohort's other teams lend for the model is refused; a guarantee below the team's
// current use is saved with a warning that says what happens.
func (s *Service) Save(ctx context.Context, in Input) (Saved, error) {
	in.Team, in.GPUModel, in.Cohort = strings.TrimSpace(in.Team), strings.TrimSpace(in.GPUModel), strings.TrimSpace(in.Cohort)
	if err := in.validate(); err != nil {
		return Saved{}, err
	}
	var out Saved
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		team, err := tx.TeamByName(ctx, in.Team)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return models.Invalid("team", "there is no team %q", in.Team)
		case err != nil:
			return err
		case team.Archived:
			return models.Invalid("team", "team %q is archived: restore it before giving it a quota", in.Team)
		}
		all, err := tx.Quotas(ctx)
		if err != nil {
			return err
		}
		if err := checkCohort(ctx, tx, in, team.ID, all); err != nil {
			return err
		}
		q := &models.Quota{TeamID: team.ID, GPUModel: in.GPUModel}
		var before any
		if old, err := tx.QuotaOf(ctx, team.ID, in.GPUModel); err == nil {
			q, before = old, view(*old)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		q.QuotaLimits = in.QuotaLimits
		if err := tx.SaveQuota(ctx, q); err != nil {
			return err
		}
		out.Quota = q
		detail := map[string]any{"team": in.Team, "gpu_model": in.GPUModel, "quota": view(*q)}
		if before != nil {
			detail["before"] = before
		}
		return s.audit.In(tx).Append(ctx, audit.Entry{Action: "quota.saved", ObjectType: "quota", ObjectID: in.Team + "/" + modelName(in.GPUModel), Detail: detail})
	})
	if err != nil {
		return Saved{}, fmt.Errorf("save the quota of %s for %s: %w", in.Team, modelName(in.GPUModel), err)
	}
	use, err := s.use(ctx)
	if err != nil {
		return out, err
	}
	quotas, err := s.store.Quotas(ctx)
	if err != nil {
		return out, err
	}
	out.Warning = belowUse(in, covered(use, quotas, *out.Quota), *out.Quota)
	return out, nil
}

// checkCohort refuses a borrowing limit, of any resource, beyond what the cohort's other
// teams lend of it for the model.
func checkCohort(ctx context.Context, tx *store.Store, in Input, teamID int64, all []models.Quota) error {
	if in.Cohort == "" {
		return nil
	}
	for _, r := range resources {
		l := r.ofInput(in)
		if l.borrowing == nil || *l.borrowing == 0 {
			continue
		}
		var lends int64
		var lenders []string
		for _, o := range all {
			ol := r.of(o)
			if o.Cohort != in.Cohort || o.GPUModel != in.GPUModel || o.TeamID == teamID || !r.limited(ol) {
				continue
			}
			lends = satAdd(lends, lendCap(ol))
			if t, err := tx.TeamByID(ctx, o.TeamID); err == nil {
				lenders = append(lenders, fmt.Sprintf("%s %s", t.Name, r.figure(lendCap(ol))))
			}
		}
		if *l.borrowing <= lends {
			continue
		}
		what := modelName(in.GPUModel)
		if r.noun != "" {
			what = r.noun + " on " + what
		}
		from := "no other team of the cohort has a quota for " + what + " yet"
		if len(lenders) > 0 {
			from = "lent by " + strings.Join(lenders, ", ")
		}
		return models.Invalid(r.fields[1], "%s is more than cohort %s can lend for %s: %s (%s). Lower the limit, or give the cohort's other teams quotas first",
			r.count(*l.borrowing), in.Cohort, what, r.count(lends), from)
	}
	return nil
}

// belowUse explains a guarantee below the current use, or is empty when none is.
func belowUse(in Input, use amounts, q models.Quota) string {
	var parts []string
	for i, r := range resources {
		l := r.of(q)
		if !r.limited(l) || use[i] <= l.nominal {
			continue
		}
		what := r.count(use[i]) + " of " + modelName(in.GPUModel)
		if r.noun != "" {
			what = r.count(use[i]) + " of " + r.noun + " on " + modelName(in.GPUModel)
		}
		parts = append(parts, fmt.Sprintf("%s now, more than the new guarantee of %s", what, r.count(l.nominal)))
	}
	if len(parts) == 0 {
		return ""
	}
	next := "New jobs of " + in.Team + " wait until its use falls below the quota."
	if in.Cohort != "" {
		next = "New jobs of " + in.Team + " start only as far as they can borrow from cohort " + in.Cohort + "; the teams whose guarantee is lent may reclaim it by preempting preemptible jobs."
	}
	return fmt.Sprintf("%s uses %s. Running jobs keep running: a quota never stops them. %s", in.Team, strings.Join(parts, "; "), next)
}

// Delete removes a quota; the team's use of that model is then unlimited, or falls
// under its any-model quota.
func (s *Service) Delete(ctx context.Context, id int64) (string, error) {
	var name string
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		all, err := tx.Quotas(ctx)
		if err != nil {
			return err
		}
		for _, q := range all {
			if q.ID != id {
				continue
			}
			t, err := tx.TeamByID(ctx, q.TeamID)
			if err != nil {
				return err
			}
			name = t.Name + "/" + modelName(q.GPUModel)
			if err := tx.DeleteQuota(ctx, id); err != nil {
				return err
			}
			return s.audit.In(tx).Append(ctx, audit.Entry{Action: "quota.deleted", ObjectType: "quota", ObjectID: name, Detail: map[string]any{"before": view(q)}})
		}
		return &NotFoundError{ID: id}
	})
	if err != nil {
		return "", fmt.Errorf("delete quota %d: %w", id, err)
	}
	return name, nil
}

// NotFoundError is a quota id that does not exist.
type NotFoundError struct{ ID int64 }

func (e *NotFoundError) Error() string { return "there is no quota " + strconv.FormatInt(e.ID, 10) }

// view is a quota as the audit log records it.
func view(q models.Quota) map[string]any {
	limit := func(p *int64, none string, figure func(int64) string) any {
		if p == nil {
			return none
		}
		return figure(*p)
	}
	return map[string]any{"cohort": q.Cohort, "guaranteed": GPUs(q.NominalMilli), "borrowing_limit": limit(q.BorrowingLimitMilli, "unlimited", GPUs),
		"lending_limit": limit(q.LendingLimitMilli, "unlimited", GPUs), "cpu_milli": q.CPUMilli, "memory_mib": q.MemoryMiB,
		"cpu_borrowing_limit_milli": limit(q.CPUBorrowingLimitMilli, "unlimited", itoa), "cpu_lending_limit_milli": limit(q.CPULendingLimitMilli, "unlimited", itoa),
		"memory_borrowing_limit_mib": limit(q.MemoryBorrowingLimitMiB, "unlimited", itoa), "memory_lending_limit_mib": limit(q.MemoryLendingLimitMiB, "unlimited", itoa)}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// lendCap is what a quota puts into its cohort of one resource: its guarantee, or its
// lending limit.
func lendCap(l limits) int64 {
	if l.lending != nil {
		return min(*l.lending, l.nominal)
	}
	return l.nominal
}

// satAdd adds non-negative figures, saturating at the largest int64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func modelName(m string) string {
	if m == "" {
		return "any model"
	}
	return m
}

// GPUs writes milli-GPU as GPUs: 16000 is "16", 2500 is "2.5". Milli-cores read the same.
func GPUs(milli int64) string {
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64)
}

// count writes milli-GPU with its noun: "1 GPU", "2.5 GPUs".
func count(milli int64) string {
	if milli == 1000 {
		return "1 GPU"
	}
	return GPUs(milli) + " GPUs"
}

// Cores writes milli-cores with their noun: "1 core", "2.5 cores".
func Cores(milli int64) string {
	if milli == 1000 {
		return "1 core"
	}
	return GPUs(milli) + " cores"
}

// GiB writes MiB as GiB: 8192 is "8 GiB", 1536 "1.5 GiB".
func GiB(mib int64) string { return gib(mib) + " GiB" }

func gib(mib int64) string {
	return strconv.FormatFloat(math.Round(float64(mib)/1024*1000)/1000, 'f', -1, 64)
}

// ParseGPUs reads a number of GPUs such as "4" or "0.5" as milli-GPU; field names it in
// the error.
func ParseGPUs(field, s string) (int64, error) { return ParseMilli(field, s, "GPUs") }

// ParseMilli reads a decimal with at most three places, such as "4" or "0.5", in
// thousandths; unit names what it counts in the error.
func ParseMilli(field, s, unit string) (int64, error) {
	m := gpusRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, models.Invalid(field, "%q is not a number of %s: write it like 4 or 0.5 (at most three decimals)", s, unit)
	}
	whole, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || whole > maxMilli/1000 {
		return 0, models.Invalid(field, "%q is more %s than Gantry counts", s, unit)
	}
	frac, _ := strconv.ParseInt((m[2] + "000")[:3], 10, 64)
	return whole*1000 + frac, nil
}

// useKey is a team's use of one GPU model ("" for its jobs without GPUs).
type useKey struct {
	team  int64
	model string
}

// amounts are a use of each of the resources, in their order: milli-GPU, milli-cores, MiB.
type amounts [3]int64

// use is what each team holds now, per GPU model, from the active allocations: the GPUs
// under their model, CPU and memory under the model of the allocation's first GPU (""
// without GPUs), as the scheduler counts them.
func (s *Service) use(ctx context.Context) (map[useKey]amounts, error) {
	held, err := s.store.ActiveAllocationUses(ctx)
	if err != nil {
		return nil, err
	}
	modelOf, err := s.models(ctx)
	if err != nil {
		return nil, err
	}
	out := map[useKey]amounts{}
	add := func(k useKey, r int, v int64) {
		u := out[k]
		u[r] += v
		out[k] = u
	}
	for _, h := range held {
		devices, err := agentapi.ParseDevices(h.Devices)
		if err != nil {
			return nil, fmt.Errorf("devices of an allocation of team %d: %w", h.TeamID, err)
		}
		model := ""
		for k, d := range devices {
			m := modelOf[d.UUID]
			if k == 0 {
				model = m
			}
			add(useKey{h.TeamID, m}, 0, d.Milli)
		}
		add(useKey{h.TeamID, model}, 1, h.CPUMilli)
		add(useKey{h.TeamID, model}, 2, h.MemoryMiB)
	}
	return out, nil
}

// models is the model of every GPU of the fleet, by UUID: an allocation names the GPU
// of a MIG instance it holds (agentapi.Device.UUID), not the instance.
func (s *Service) models(ctx context.Context) (map[string]string, error) {
	gpus, err := s.fleet.FleetGPUs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(gpus))
	for _, g := range gpus {
		out[g.UUID] = g.Model
	}
	return out, nil
}

// covered is the use that quota q counts: its model's, or for an any-model quota the
// team's use of every model without a quota of its own and of no GPU (as the scheduler
// counts it).
func covered(use map[useKey]amounts, quotas []models.Quota, q models.Quota) amounts {
	if q.GPUModel != "" {
		return use[useKey{q.TeamID, q.GPUModel}]
	}
	own := map[string]bool{}
	for _, o := range quotas {
		if o.TeamID == q.TeamID && o.GPUModel != "" {
			own[o.GPUModel] = true
		}
	}
	var sum amounts
	for k, v := range use {
		if k.team == q.TeamID && !own[k.model] {
			for r := range sum {
				sum[r] += v[r]
			}
		}
	}
	return sum
}
