package scheduler

import (
	"fmt"
	"math"
	"strconv"
)

// quotaKey names one quota entry: a team and a model (AnyModel for the catch-all).
type quotaKey struct {
	team  string
	model string
}

// cohortKey names the entries that lend to each other: one cohort, one model.
type cohortKey struct {
	cohort string
	model  string
}

// amounts is a vector of resources, indexed by resGPU (milli-GPU), resCPU (milli-cores)
// and resRAM (MiB).
type amounts [numRes]int64

// quotaLedger tracks usage against quotas after Kueue's cohort model, per resource: an
// entry may use its nominal quota; beyond it, it borrows from what the cohort's other
// entries for the same model lend, up to its borrowing limit.
type quotaLedger struct {
	quotas  map[quotaKey]Quota
	teams   map[string]bool // teams that have any quota
	cohorts map[cohortKey][]quotaKey
	usage   map[quotaKey]amounts
}

func newQuotaLedger(qs []Quota) (*quotaLedger, error) {
	l := &quotaLedger{quotas: map[quotaKey]Quota{}, teams: map[string]bool{}, cohorts: map[cohortKey][]quotaKey{}, usage: map[quotaKey]amounts{}}
	for i, q := range qs {
		if err := checkQuota(i, q); err != nil {
			return nil, err
		}
		k := quotaKey{q.Team, q.Model}
		if _, dup := l.quotas[k]; dup {
			return nil, &FieldError{Field: fmt.Sprintf("quotas[%d].model", i), Message: fmt.Sprintf("team %s has two quotas for %s", q.Team, modelName(q.Model))}
		}
		l.quotas[k] = q
		l.teams[q.Team] = true
		if q.Cohort != "" {
			ck := cohortKey{q.Cohort, q.Model}
			l.cohorts[ck] = append(l.cohorts[ck], k)
		}
	}
	return l, nil
}

// checkQuota rejects a quota that cannot be admitted against.
func checkQuota(i int, q Quota) error {
	field := func(f string) string { return fmt.Sprintf("quotas[%d].%s", i, f) }
	if q.Team == "" {
		return &FieldError{Field: field("team"), Message: "must not be empty"}
	}
	for r := range numRes {
		rq := q.resource(r)
		prefix := [numRes]string{"", "cpu.", "ram."}[r]
		switch {
		case rq.Nominal < 0:
			return &FieldError{Field: field(prefix + "nominal"), Message: fmt.Sprintf("%d is negative; allowed: 0 or more %s", rq.Nominal, rawUnits[r])}
		case rq.LendingLimit > rq.Nominal:
			return &FieldError{Field: field(prefix + "lending_limit"), Message: fmt.Sprintf("%d exceeds the nominal quota %d", rq.LendingLimit, rq.Nominal)}
		}
	}
	return nil
}

// resource returns the quota of one resource.
func (q Quota) resource(r int) ResourceQuota {
	switch r {
	case resCPU:
		return q.CPU
	case resRAM:
		return q.RAM
	}
	return ResourceQuota{Nominal: q.Nominal, BorrowingLimit: q.BorrowingLimit, LendingLimit: q.LendingLimit}
}

// limits reports whether the quota limits a resource: GPUs always, CPU and RAM when
// their nominal is set.
func (q Quota) limits(r int) bool { return r == resGPU || q.resource(r).Nominal > 0 }

// entry returns the quota covering a team's use of a model, falling back to AnyModel.
func (l *quotaLedger) entry(team, model string) (quotaKey, bool) {
	if _, ok := l.quotas[quotaKey{team, model}]; ok {
		return quotaKey{team, model}, true
	}
	if _, ok := l.quotas[quotaKey{team, AnyModel}]; ok {
		return quotaKey{team, AnyModel}, true
	}
	return quotaKey{}, false
}

// charge adds v (negative to remove) of resource r to the team's usage of a model.
func (l *quotaLedger) charge(team, model string, r int, v int64) {
	if v == 0 {
		return
	}
	k, ok := l.entry(team, model)
	if !ok {
		k = quotaKey{team, model}
	}
	u := l.usage[k]
	u[r] += v
	l.usage[k] = u
}

// lendCap is what an entry puts into its cohort: its nominal, or its lending limit.
func lendCap(q ResourceQuota) int64 {
	if q.LendingLimit >= 0 {
		return min(q.LendingLimit, q.Nominal)
	}
	return q.Nominal
}

// satAdd adds two non-negative amounts, saturating at the largest int64, so that
// unlimited and huge limits compare without overflowing.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// admit reports whether the team may take ask more on a model's GPUs (for a replica
// without GPUs, AnyModel), and if not why, naming the resource.
func (l *quotaLedger) admit(team, model string, ask amounts) (bool, string) {
	if !l.teams[team] {
		return true, ""
	}
	k, ok := l.entry(team, model)
	if !ok {
		if ask[resGPU] == 0 {
			// No quota covers it, and it takes no GPU, the one resource a team with
			// quotas is always limited in.
			return true, ""
		}
		return false, fmt.Sprintf("team %s has no GPU quota for %s", team, model)
	}
	q := l.quotas[k]
	for r := range numRes {
		if ask[r] == 0 || !q.limits(r) {
			continue
		}
		if why := l.admitResource(k, q, r, ask[r]); why != "" {
			return false, why
		}
	}
	return true, ""
}

// admitResource checks one resource of an entry; it returns why not, or "".
func (l *quotaLedger) admitResource(k quotaKey, q Quota, r int, ask int64) string {
	rq := q.resource(r)
	used := l.usage[k][r]
	after := satAdd(used, ask)
	if after <= rq.Nominal {
		return ""
	}
	why := exhausted(k, r, used, rq.Nominal, ask)
	switch {
	case q.Cohort == "":
		return why
	case rq.BorrowingLimit >= 0 && after-rq.Nominal > rq.BorrowingLimit:
		return why + fmt.Sprintf(", and it may borrow at most %s %s from cohort %s", amount(r, rq.BorrowingLimit), units[r], q.Cohort)
	}
	// The cohort's pool is what its entries lend; each entry draws on it for usage
	// beyond the part of its nominal it keeps to itself.
	var pool, drawn int64
	for _, ok := range l.cohorts[cohortKey{q.Cohort, k.model}] {
		o := l.quotas[ok]
		if !o.limits(r) {
			// Unlimited in this resource: it neither lends nor draws.
			continue
		}
		orq := o.resource(r)
		pool = satAdd(pool, lendCap(orq))
		u := l.usage[ok][r]
		if ok == k {
			u = after
		}
		drawn = satAdd(drawn, max(0, u-(orq.Nominal-lendCap(orq))))
	}
	if drawn > pool {
		return why + fmt.Sprintf(", and cohort %s has nothing left to lend", q.Cohort)
	}
	return ""
}

// borrowing reports whether a team uses more of a resource of the model than its
// nominal quota.
func (l *quotaLedger) borrowing(team, model string, r int) bool {
	k, ok := l.entry(team, model)
	if !ok {
		return false
	}
	q := l.quotas[k]
	return q.limits(r) && l.usage[k][r] > q.resource(r).Nominal
}

// nominalTotal is the team's total nominal GPU quota, the weight of its fair share.
func (l *quotaLedger) nominalTotal(team string) int64 {
	var s int64
	for k, q := range l.quotas {
		if k.team == team {
			s = satAdd(s, q.Nominal)
		}
	}
	return s
}

// resource names, units as explanations write them and units of the raw figures.
var (
	resourceNames = [numRes]string{"GPU", "CPU", "memory"}
	units         = [numRes]string{"GPUs", "cores", "GiB"}
	rawUnits      = [numRes]string{"milli-GPU", "milli-cores", "MiB"}
)

// exhausted says that an entry's quota of a resource has no room for ask more.
func exhausted(k quotaKey, r int, used, nominal, ask int64) string {
	what := resourceNames[r] + " quota"
	if r == resGPU || k.model != AnyModel {
		what += " for " + modelName(k.model)
	}
	s := fmt.Sprintf("team %s's %s is exhausted: %s/%s %s", k.team, what, amount(r, used), amount(r, nominal), units[r])
	if used < nominal {
		s += fmt.Sprintf(", too little for %s more", amount(r, ask))
	}
	return s
}

// amount writes a resource's raw figure in its unit: GPUs, cores, GiB.
func amount(r int, v int64) string {
	switch r {
	case resCPU:
		return cores(v)
	case resRAM:
		return strconv.FormatFloat(math.Round(float64(v)/1024*100)/100, 'f', -1, 64)
	}
	return gpus(v)
}

func modelName(m string) string {
	if m == AnyModel {
		return "any model"
	}
	return m
}

// gpus formats milli-GPU as GPUs: 16000 -> "16", 2500 -> "2.5".
func gpus(milli int64) string {
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64)
}
