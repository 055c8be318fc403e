package scheduler

import (
	"fmt"
	"time"
)

// detailedExplanations bounds how many unplaced jobs per cycle get the costlier
// "would fit after N jobs finish" part of their explanation: the ones nearest the head.
const detailedExplanations = 16

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
	for _, r := range s.order(snap, c) {
		j := r.job
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
		if !ok && s.cfg.Preemption {
			var victims []*victim
			if p, victims, ok = s.preempt(c, &j, r.class, lim); ok {
				for _, v := range victims {
					plan.Preemptions = append(plan.Preemptions, Preemption{
						JobID: v.job.ID, Team: v.job.Team, Class: v.class.Name, For: j.ID, Reason: preemptionReason(v, j, r.class),
					})
				}
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
		valid := validateShape(j.Request, s.cfg) == nil
		if valid && head == nil && !s.quotaBound(c, &j) {
			// Blocked for lack of capacity: once running work ends it fits.
			if ws = s.waits(c, &j); len(ws) > 0 {
				if !s.cfg.Backfill {
					blocker = &r.job
				} else if rsv, nodes := reserve(c, &j, ws); rsv != nil {
					plan.Reservation, held, head = rsv, nodes, &r.job
					ex.Reason += "; " + reservationPhrase(rsv)
				}
			}
		}
		if valid && detailed < detailedExplanations && ex.Rejections[RejectQuota] == 0 {
			if ws == nil {
				ws = s.waits(c, &j)
			}
			if w := s.waitPhrase(ws); w != "" {
				ex.Reason += "; " + w
			}
			detailed++
		}
		plan.Unplaced = append(plan.Unplaced, Unplaced{JobID: j.ID, Explanation: ex})
	}
	return plan, nil
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
	return fmt.Sprintf("%s held for it from %s", plural(len(r.NodeIDs), "node"), r.Start.UTC().Format(time.RFC3339))
}
