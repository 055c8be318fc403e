package scheduler

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// detailedExplanations bounds how many unplaced jobs per cycle get the costlier
// "would fit after N jobs finish" part of their explanation: the ones nearest the head.
const detailedExplanations = 8

// Schedule runs one scheduling cycle over a snapshot. Pending jobs are taken in priority
// order (class, then ageing and fair share). Each is placed if it fits; else, if its class
// outranks preemptible running jobs, the cheapest set of them is preempted for it; else
// the first job blocked for lack of capacity gets a reservation, and the jobs after it
// start only where they do not delay it. Every job left waiting is explained.
func (s *Scheduler) Schedule(snap Snapshot) (Plan, error) {
	c, err := NewCluster(snap, s.cfg)
	if err != nil {
		return Plan{}, fmt.Errorf("schedule: %w", err)
	}
	var plan Plan
	var held []bool
	var head, blocker *Job
	detailed := 0
	// Within a cycle free capacity only shrinks, so a job that asks for no less than one
	// that already failed fails too, until a preemption frees room or a reservation
	// changes what is held.
	failed := failures{}
	lowest := s.lowestPreemptible(c)
	for _, r := range s.order(snap, c) {
		j := r.job
		if ex, ok := failed.dominating(j); ok {
			plan.Unplaced = append(plan.Unplaced, Unplaced{JobID: j.ID, Explanation: ex})
			continue
		}
		if blocker != nil {
			// Without backfill nothing overtakes a job blocked for lack of capacity.
			plan.Unplaced = append(plan.Unplaced, Unplaced{JobID: j.ID, Explanation: Explanation{
				Reason: fmt.Sprintf("waiting behind job %s, which ranks higher and waits for capacity (backfill is off)", blocker.ID),
				Nodes:  len(c.nodes),
			}})
			continue
		}
		lim := limits{only: -1, reserved: held}
		p, ok, ex := s.place(c, &j, lim)
		if !ok && head != nil && s.finishesBefore(j, snap.Now, plan.Reservation.Start) {
			// Short enough to be done before the head's reserved start: it may use the held nodes.
			p, ok, _ = s.place(c, &j, anywhere())
		}
		if !ok && s.cfg.Preemption && r.class.CanPreempt && r.class.Weight > lowest {
			var victims []*victim
			if p, victims, ok = s.preempt(c, &j, r.class, lim); ok {
				for _, v := range victims {
					plan.Preemptions = append(plan.Preemptions, Preemption{
						JobID: v.job.ID, Team: v.job.Team, Class: v.class.Name, For: j.ID, Reason: preemptionReason(v, j, r.class),
					})
				}
				clear(failed)
			}
		}
		if ok {
			if err := c.Assume(j, p); err != nil {
				return Plan{}, fmt.Errorf("schedule: %w", err)
			}
			plan.Placements = append(plan.Placements, p)
			continue
		}
		if head != nil && ex.Rejections[RejectReserved] > 0 {
			ex.Reason += fmt.Sprintf("; it would delay job %s, which holds %s", head.ID, plural(len(plan.Reservation.NodeIDs), "node"))
		}
		var ws []nodeWait
		waited := false
		valid := validateShape(j.Request, s.cfg) == nil
		if valid && head == nil && !s.quotaBound(c, &j) {
			// Blocked for lack of capacity: once running work ends it fits.
			ws, waited = s.waits(c, &j), true
			if len(ws) > 0 {
				if !s.cfg.Backfill {
					blocker = &r.job
				} else if rsv, nodes := reserve(c, &j, ws); rsv != nil {
					plan.Reservation, held, head = rsv, nodes, &r.job
					ex.Reason += "; " + reservationPhrase(rsv)
					clear(failed)
				}
			}
		}
		if valid && detailed < detailedExplanations && ex.Rejections[RejectQuota] == 0 {
			if !waited {
				ws = s.waits(c, &j)
			}
			if w := s.waitPhrase(ws); w != "" {
				ex.Reason += "; " + w
			}
			detailed++
		}
		if head == nil || head.ID != j.ID {
			failed.add(j, ex)
		}
		plan.Unplaced = append(plan.Unplaced, Unplaced{JobID: j.ID, Explanation: ex})
	}
	return plan, nil
}

// shapeKey is everything about a job that decides whether and where it fits, but the
// amounts compared by dominance (see failure).
type shapeKey struct {
	gpus, milli                      int
	mem                              int64
	models, mig, class, pool, labels string
	placement                        string
	team                             string
	preemptible, spot, container     bool
	nvlink                           bool
	kind                             Kind
}

// failure is a job that did not fit: any job of the same shape that asks for at least
// its CPU, RAM, scratch, replicas and run time does not fit either.
type failure struct {
	jobID             string
	cpu, ram, scratch int64
	replicas          int
	runtime           time.Duration // unknown counts as forever
	ex                Explanation
}

type failures map[shapeKey][]failure

func keyOf(j Job) shapeKey {
	r := j.Request
	k := shapeKey{gpus: r.GPUs, milli: r.GPUMilli, mem: r.GPUMemoryMiB, mig: r.MIGProfile, class: r.Class, pool: r.Pool,
		team: j.Team, preemptible: r.Preemptible, spot: r.SpotAllowed, container: r.Container, nvlink: r.NVLink, kind: r.Kind}
	if len(r.GPUModels) > 0 {
		k.models = strings.Join(r.GPUModels, "|")
	}
	if len(r.NodeSelector) > 0 {
		k.labels = labels(r.NodeSelector)
	}
	if !r.Policy.any() {
		k.placement = r.Policy.describe()
	}
	return k
}

func failureOf(j Job, ex Explanation) failure {
	r := j.Request
	f := failure{jobID: j.ID, cpu: r.CPUMilli, ram: r.RAMMiB, scratch: r.ScratchMiB, replicas: max(r.Replicas, 1), runtime: r.ExpectedRuntime, ex: ex}
	if f.runtime <= 0 {
		f.runtime = time.Duration(math.MaxInt64)
	}
	return f
}

func (fs failures) add(j Job, ex Explanation) {
	k := keyOf(j)
	fs[k] = append(fs[k], failureOf(j, ex))
}

// dominating finds a failed job that asks for no more than j, and explains j by it.
func (fs failures) dominating(j Job) (Explanation, bool) {
	me := failureOf(j, Explanation{})
	for _, f := range fs[keyOf(j)] {
		if f.cpu <= me.cpu && f.ram <= me.ram && f.scratch <= me.scratch && f.replicas <= me.replicas && f.runtime <= me.runtime {
			ex := f.ex
			ex.Reason = "like job " + f.jobID + ", which asks for no more and does not fit either: " + f.ex.Reason
			return ex, true
		}
	}
	return Explanation{}, false
}

// lowestPreemptible is the lowest class weight among running preemptible jobs: a job
// must outrank it for preemption to be worth trying. Jobs placed during the cycle rank
// no lower than the jobs after them, so they never lower it.
func (s *Scheduler) lowestPreemptible(c *Cluster) float64 {
	lowest := math.Inf(1)
	for id := range c.preemptible {
		rs := c.running[id]
		if pc, ok := s.cfg.class(rs[0].alloc.Job.Request.Class); ok {
			lowest = math.Min(lowest, pc.Weight)
		}
	}
	return lowest
}

// finishesBefore reports whether a job started now is expected to end by the deadline.
// A job without an expected run time, or a reservation without a known start, never is.
func (s *Scheduler) finishesBefore(j Job, now, deadline time.Time) bool {
	if deadline.IsZero() || j.Request.ExpectedRuntime <= 0 {
		return false
	}
	return !now.Add(j.Request.ExpectedRuntime).After(deadline)
}

// quotaBound reports whether the job would fit if its team's quota allowed it.
func (s *Scheduler) quotaBound(c *Cluster, j *Job) bool {
	_, ok, _ := s.place(c, j, limits{only: -1, ignoreQuota: true})
	return ok
}

func reservationPhrase(r *Reservation) string {
	if r.Start.IsZero() {
		return fmt.Sprintf("%s held for it; start unknown, as a running job there has no expected run time", plural(len(r.NodeIDs), "node"))
	}
	return fmt.Sprintf("%s held for it from %s", plural(len(r.NodeIDs), "node"), r.Start.UTC().Format("2006-01-02 15:04 UTC"))
}
