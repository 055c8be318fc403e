package scheduler

import (
	"fmt"
	"strconv"
)

// quotaKey names one quota entry: a team and a model (AnyModel for the catch-all).
type quotaKey struct {
	team  string
	model string
}

// quotaLedger tracks GPU usage against quotas, after Kueue's cohort model: an entry
// may use its nominal quota; beyond it, it borrows from what the cohort's other entries
// for the same model lend, up to its borrowing limit.
type quotaLedger struct {
	quotas map[quotaKey]Quota
	teams  map[string]bool // teams that have any quota
	usage  map[quotaKey]int64
}

func newQuotaLedger(qs []Quota) (*quotaLedger, error) {
	l := &quotaLedger{quotas: map[quotaKey]Quota{}, teams: map[string]bool{}, usage: map[quotaKey]int64{}}
	for i, q := range qs {
		field := func(f string) string { return fmt.Sprintf("quotas[%d].%s", i, f) }
		switch {
		case q.Team == "":
			return nil, &FieldError{Field: field("team"), Message: "must not be empty"}
		case q.Nominal < 0:
			return nil, &FieldError{Field: field("nominal"), Message: fmt.Sprintf("%d is negative; allowed: 0 or more milli-GPU", q.Nominal)}
		case q.LendingLimit > q.Nominal:
			return nil, &FieldError{Field: field("lending_limit"), Message: fmt.Sprintf("%d exceeds the nominal quota %d", q.LendingLimit, q.Nominal)}
		}
		k := quotaKey{q.Team, q.Model}
		if _, dup := l.quotas[k]; dup {
			return nil, &FieldError{Field: field("model"), Message: fmt.Sprintf("team %s has two quotas for %s", q.Team, modelName(q.Model))}
		}
		l.quotas[k] = q
		l.teams[q.Team] = true
	}
	return l, nil
}

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

// charge adds (sign 1) or removes (sign -1) milli-GPU per model to a team's usage.
func (l *quotaLedger) charge(team string, byModel map[string]int64, sign int64) {
	for model, milli := range byModel {
		k, ok := l.entry(team, model)
		if !ok {
			k = quotaKey{team, model}
		}
		l.usage[k] += sign * milli
	}
}

// lendCap is what an entry puts into its cohort: its nominal, or its lending limit.
func lendCap(q Quota) int64 {
	if q.LendingLimit >= 0 {
		return min(q.LendingLimit, q.Nominal)
	}
	return q.Nominal
}

// admit reports whether the team may take milli more GPU of the model, and if not why.
func (l *quotaLedger) admit(team, model string, milli int64) (bool, string) {
	if !l.teams[team] || milli == 0 {
		return true, ""
	}
	k, ok := l.entry(team, model)
	if !ok {
		return false, fmt.Sprintf("team %s has no GPU quota for %s", team, model)
	}
	q := l.quotas[k]
	used := l.usage[k]
	after := used + milli
	if after <= q.Nominal {
		return true, ""
	}
	exhausted := fmt.Sprintf("team %s quota for %s exhausted: %s/%s GPUs", team, modelName(k.model), gpus(used), gpus(q.Nominal))
	if q.Cohort == "" || (q.BorrowingLimit >= 0 && after-q.Nominal > q.BorrowingLimit) {
		return false, exhausted
	}
	// The cohort's pool is what its entries lend; each entry draws on it for usage
	// beyond the part of its nominal it keeps to itself.
	var pool, drawn int64
	for ok2, o := range l.quotas {
		if o.Cohort != q.Cohort || ok2.model != k.model {
			continue
		}
		pool += lendCap(o)
		u := l.usage[ok2]
		if ok2 == k {
			u = after
		}
		drawn += max(0, u-(o.Nominal-lendCap(o)))
	}
	if drawn > pool {
		return false, exhausted + fmt.Sprintf(", and cohort %s has nothing left to lend", q.Cohort)
	}
	return true, ""
}

// borrowing reports whether a team uses more of the model than its nominal quota.
func (l *quotaLedger) borrowing(team, model string) bool {
	k, ok := l.entry(team, model)
	if !ok {
		return false
	}
	return l.usage[k] > l.quotas[k].Nominal
}

// nominalTotal is the team's total nominal GPU quota, the weight of its fair share.
func (l *quotaLedger) nominalTotal(team string) int64 {
	var s int64
	for k, q := range l.quotas {
		if k.team == team {
			s += q.Nominal
		}
	}
	return s
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
