package scheduler

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"
)

// ranked is a pending job with its class and dynamic priority for this cycle.
type ranked struct {
	job      Job
	class    PriorityClass
	priority float64
}

// order sorts the pending jobs for one cycle: by class weight, then within a class by
// dynamic priority (ageing plus fair share), then by submit time and ID. Class order is
// strict whatever the weights' spacing. Jobs of an unknown class rank last with weight 0
// and are explained as invalid when placed.
func (s *Scheduler) order(snap Snapshot, c *Cluster) []*ranked {
	fair := s.fairShare(snap, c)
	all := make([]ranked, len(snap.Pending))
	out := make([]*ranked, 0, len(snap.Pending))
	for i, j := range snap.Pending {
		pc, _ := s.cfg.class(j.Request.Class)
		r := &all[i]
		r.job, r.class = j, pc
		r.priority = s.cfg.AgeWeight * ageFactor(snap.Now.Sub(j.SubmitTime), s.cfg.AgeHorizon)
		r.priority += s.cfg.FairShareWeight * fair.factor(j.Team)
		out = append(out, r)
	}
	// Sort compact keys rather than the jobs: a hundred thousand jobs sort in milliseconds.
	type key struct {
		weight, priority float64
		submit           time.Time
		r                *ranked
	}
	keys := make([]key, len(out))
	for i, r := range out {
		keys[i] = key{r.class.Weight, r.priority, r.job.SubmitTime, r}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		if c := cmp.Compare(b.priority, a.priority); c != 0 {
			return c
		}
		if c := a.submit.Compare(b.submit); c != 0 {
			return c
		}
		return strings.Compare(a.r.job.ID, b.r.job.ID)
	})
	for i, k := range keys {
		out[i] = k.r
	}
	return out
}

// ageFactor grows linearly from 0 at submission to 1 after the horizon.
func ageFactor(wait, horizon time.Duration) float64 {
	if wait <= 0 {
		return 0
	}
	return math.Min(1, float64(wait)/float64(horizon))
}

// fairShares holds each team's fair-share factor for one cycle.
type fairShares struct {
	factors map[string]float64
}

// factor is 2^(-usage/entitlement): 1 for a team that used nothing, 0.5 for a team
// that used exactly its entitlement, less for more. Unknown teams get 1.
func (f fairShares) factor(team string) float64 {
	if v, ok := f.factors[team]; ok {
		return v
	}
	return 1
}

// resource vector indexes for dominant-resource shares.
const (
	resGPU = iota
	resCPU
	resRAM
	numRes
)

// fairShare computes each team's decayed dominant-resource usage (past records and
// running allocations, halving every FairShareHalfLife) as a share of all teams' usage,
// against its entitlement: its share of the nominal quotas, or an equal share when
// there are no quotas.
func (s *Scheduler) fairShare(snap Snapshot, c *Cluster) fairShares {
	halfLife := s.cfg.FairShareHalfLife.Seconds()
	var capacity [numRes]float64
	for _, n := range snap.Nodes {
		capacity[resGPU] += float64(len(n.GPUs) * 1000)
		capacity[resCPU] += float64(n.CPUMilli)
		capacity[resRAM] += float64(n.RAMMiB)
	}
	usage := map[string]*[numRes]float64{}
	add := func(team string, start, end time.Time, rates [numRes]float64) {
		if end.After(snap.Now) {
			end = snap.Now
		}
		if !end.After(start) {
			return
		}
		w := decayedSeconds(snap.Now.Sub(start).Seconds(), snap.Now.Sub(end).Seconds(), halfLife)
		u := usage[team]
		if u == nil {
			u = &[numRes]float64{}
			usage[team] = u
		}
		for r := range rates {
			u[r] += rates[r] * w
		}
	}
	for _, rec := range snap.Usage {
		add(rec.Team, rec.Start, rec.End, [numRes]float64{float64(rec.GPUMilli), float64(rec.CPUMilli), float64(rec.RAMMiB)})
	}
	for _, a := range snap.Running {
		rp := a.Replica
		add(a.Job.Team, a.StartTime, snap.Now, [numRes]float64{float64(rp.GPUMilli()), float64(rp.CPUMilli), float64(rp.RAMMiB)})
	}
	teams := map[string]bool{}
	for t := range usage {
		teams[t] = true
	}
	for _, j := range snap.Pending {
		teams[j.Team] = true
	}
	// The largest usage possible: the whole cluster busy forever.
	full := halfLife / math.Ln2
	dominant := map[string]float64{}
	var total float64
	for t := range teams {
		var d float64
		if u := usage[t]; u != nil {
			for r := range u {
				if capacity[r] > 0 {
					d = math.Max(d, u[r]/(capacity[r]*full))
				}
			}
		}
		dominant[t] = d
		total += d
	}
	entitlement := s.entitlements(teams, c)
	f := fairShares{factors: map[string]float64{}}
	for t := range teams {
		share := 0.0
		if total > 0 {
			share = dominant[t] / total
		}
		f.factors[t] = math.Exp2(-share / entitlement[t])
	}
	return f
}

// entitlements are the teams' shares of the nominal GPU quota, or equal shares.
func (s *Scheduler) entitlements(teams map[string]bool, c *Cluster) map[string]float64 {
	out := map[string]float64{}
	var total float64
	for t := range teams {
		total += float64(c.quotas.nominalTotal(t))
	}
	for t := range teams {
		switch {
		case total > 0:
			// A team without quota still has a small entitlement, so it is not starved.
			out[t] = math.Max(float64(c.quotas.nominalTotal(t))/total, 0.01)
		default:
			out[t] = 1 / float64(len(teams))
		}
	}
	return out
}

// decayedSeconds integrates 2^(-age/halfLife) over ages [toAge, fromAge] seconds.
func decayedSeconds(fromAge, toAge, halfLife float64) float64 {
	k := math.Ln2 / halfLife
	return (math.Exp(-k*toAge) - math.Exp(-k*fromAge)) / k
}
