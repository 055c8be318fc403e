package quotas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
}

// New returns the quota service over st, auditing changes to log.
func New(st *store.Store, log *audit.Log) *Service {
	return &Service{store: st, audit: log}
}

// Input is a quota as an admin sets it; limits are milli-GPU and nil is unlimited.
type Input struct {
	Team                string
	GPUModel            string // "" for any model
	Cohort              string
	NominalMilli        int64
	BorrowingLimitMilli *int64
	LendingLimitMilli   *int64
	CPUMilli            int64
	MemoryMiB           int64
}

var (
	gpusRE   = regexp.MustCompile(`^([0-9]{1,9})(?:\.([0-9]{1,3}))?$`)
	modelRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)
	cohortRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

// maxMilli bounds every GPU figure: a million GPUs.
const maxMilli = 1_000_000_000

func (in Input) validate() error {
	switch {
	case in.GPUModel != "" && !modelRE.MatchString(in.GPUModel):
		return models.Invalid("gpu_model", "%q is not a GPU model name: use the model as nodes report it (A100, H100, L4), or leave it empty for any model", in.GPUModel)
	case in.Cohort != "" && !cohortRE.MatchString(in.Cohort):
		return models.Invalid("cohort", "%q is not a cohort name: use lower-case letters, digits and '-'", in.Cohort)
	case in.NominalMilli < 0 || in.NominalMilli > maxMilli:
		return models.Invalid("guaranteed", "must be 0 or more GPUs")
	case in.BorrowingLimitMilli != nil && (*in.BorrowingLimitMilli < 0 || *in.BorrowingLimitMilli > maxMilli):
		return models.Invalid("borrowing_limit", "must be 0 or more GPUs, or empty for no limit")
	case in.LendingLimitMilli != nil && *in.LendingLimitMilli < 0:
		return models.Invalid("lending_limit", "must be 0 or more GPUs, or empty to lend all that is unused")
	case in.LendingLimitMilli != nil && *in.LendingLimitMilli > in.NominalMilli:
		return models.Invalid("lending_limit", "%s is more than the guaranteed %s: a team lends only from its own guarantee", count(*in.LendingLimitMilli), count(in.NominalMilli))
	case in.Cohort == "" && in.BorrowingLimitMilli != nil && *in.BorrowingLimitMilli > 0:
		return models.Invalid("borrowing_limit", "borrowing needs a cohort to borrow from: name the cohort, or set the borrowing limit to 0")
	case in.CPUMilli < 0:
		return models.Invalid("cpu", "must be 0 or more cores (0: no CPU quota)")
	case in.MemoryMiB < 0:
		return models.Invalid("memory", "must be 0 or more GiB (0: no memory quota)")
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
		q.Cohort, q.NominalMilli, q.BorrowingLimitMilli, q.LendingLimitMilli = in.Cohort, in.NominalMilli, in.BorrowingLimitMilli, in.LendingLimitMilli
		q.CPUMilli, q.MemoryMiB = in.CPUMilli, in.MemoryMiB
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
	if used := covered(use, quotas, *out.Quota); used > out.Quota.NominalMilli {
		out.Warning = belowUse(in, used)
	}
	return out, nil
}

// checkCohort refuses a borrowing limit beyond what the cohort's other teams lend for the model.
func checkCohort(ctx context.Context, tx *store.Store, in Input, teamID int64, all []models.Quota) error {
	if in.Cohort == "" || in.BorrowingLimitMilli == nil || *in.BorrowingLimitMilli == 0 {
		return nil
	}
	var lends int64
	var lenders []string
	for _, o := range all {
		if o.Cohort != in.Cohort || o.GPUModel != in.GPUModel || o.TeamID == teamID {
			continue
		}
		lends += lendCap(o)
		if t, err := tx.TeamByID(ctx, o.TeamID); err == nil {
			lenders = append(lenders, fmt.Sprintf("%s %s", t.Name, GPUs(lendCap(o))))
		}
	}
	if *in.BorrowingLimitMilli <= lends {
		return nil
	}
	from := "no other team of the cohort has a quota for " + modelName(in.GPUModel) + " yet"
	if len(lenders) > 0 {
		from = "lent by " + strings.Join(lenders, ", ")
	}
	return models.Invalid("borrowing_limit", "%s is more than cohort %s can lend for %s: %s (%s). Lower the limit, or give the cohort's other teams quotas first",
		count(*in.BorrowingLimitMilli), in.Cohort, modelName(in.GPUModel), count(lends), from)
}

// belowUse explains a guarantee below the current use.
func belowUse(in Input, used int64) string {
	next := "New jobs of " + in.Team + " wait until its use falls below the quota."
	if in.Cohort != "" {
		next = "New jobs of " + in.Team + " start only as far as they can borrow from cohort " + in.Cohort + "; the teams whose guarantee is lent may reclaim it by preempting preemptible jobs."
	}
	return fmt.Sprintf("%s uses %s of %s now, more than the new guarantee of %s. Running jobs keep running: a quota never stops them. %s",
		in.Team, count(used), modelName(in.GPUModel), count(in.NominalMilli), next)
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
	limit := func(p *int64) any {
		if p == nil {
			return "unlimited"
		}
		return GPUs(*p)
	}
	return map[string]any{"cohort": q.Cohort, "guaranteed": GPUs(q.NominalMilli), "borrowing_limit": limit(q.BorrowingLimitMilli),
		"lending_limit": limit(q.LendingLimitMilli), "cpu_milli": q.CPUMilli, "memory_mib": q.MemoryMiB}
}

// lendCap is what a quota puts into its cohort: its guarantee, or its lending limit.
func lendCap(q models.Quota) int64 {
	if q.LendingLimitMilli != nil {
		return min(*q.LendingLimitMilli, q.NominalMilli)
	}
	return q.NominalMilli
}

func modelName(m string) string {
	if m == "" {
		return "any model"
	}
	return m
}

// GPUs writes milli-GPU as GPUs: 16000 is "16", 2500 is "2.5".
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

// useKey is a team's use of one GPU model.
type useKey struct {
	team  int64
	model string
}

// use is what each team holds now, per GPU model, from the active allocations.
func (s *Service) use(ctx context.Context) (map[useKey]int64, error) {
	allocs, err := s.store.ActiveAllocations(ctx, 0)
	if err != nil {
		return nil, err
	}
	jobIDs := make([]int64, len(allocs))
	var uuids []string
	devices := make([][]agentapi.Device, len(allocs))
	for i, a := range allocs {
		jobIDs[i] = a.JobID
		if a.Devices != "" {
			if err := json.Unmarshal([]byte(a.Devices), &devices[i]); err != nil {
				return nil, fmt.Errorf("devices of allocation %d: %w", a.ID, err)
			}
		}
		for _, d := range devices[i] {
			uuids = append(uuids, d.UUID)
		}
	}
	jobs, err := s.store.JobsByIDs(ctx, jobIDs)
	if err != nil {
		return nil, err
	}
	projects, err := s.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	specs, err := s.store.GPUSpecsByUUID(ctx, uuids)
	if err != nil {
		return nil, err
	}
	teamOfProject := map[int64]int64{}
	for _, p := range projects {
		teamOfProject[p.ID] = p.TeamID
	}
	teamOfJob := map[int64]int64{}
	for _, j := range jobs {
		teamOfJob[j.ID] = teamOfProject[j.ProjectID]
	}
	out := map[useKey]int64{}
	for i, a := range allocs {
		for _, d := range devices[i] {
			out[useKey{teamOfJob[a.JobID], specs[d.UUID].Model}] += d.Milli
		}
	}
	return out, nil
}

// covered is the use that quota q counts: its model's, or for an any-model quota the
// team's use of every model without a quota of its own (as the scheduler counts it).
func covered(use map[useKey]int64, quotas []models.Quota, q models.Quota) int64 {
	if q.GPUModel != "" {
		return use[useKey{q.TeamID, q.GPUModel}]
	}
	own := map[string]bool{}
	for _, o := range quotas {
		if o.TeamID == q.TeamID {
			own[o.GPUModel] = true
		}
	}
	var sum int64
	for k, v := range use {
		if k.team == q.TeamID && !own[k.model] {
			sum += v
		}
	}
	return sum
}
