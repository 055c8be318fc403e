package scheduler

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// nodeWait is when one replica of a blocked job could start on a node: after the
// running jobs listed finish, at start (zero when one of them has no expected end).
type nodeWait struct {
	node  int
	jobs  []Job
	start time.Time
}

// maxWaitNodes bounds how many busy nodes, in node order, waits looks at, so that
// reservations and explanations stay cheap on large clusters.
const maxWaitNodes = 128

// waits finds, per node, the running jobs that must finish before one replica of the
// job fits there, ending soonest first (jobs without an expected end last). Nodes that
// cannot fit the replica even when empty are left out, and at most maxWaitNodes busy
// nodes are looked at. The cluster is left as it was.
func (s *Scheduler) waits(c *Cluster, job *Job) []nodeWait {
	// What waiting reads of a running job: small, so that large clusters stay cheap.
	type ref struct {
		jobID string
		end   time.Time
	}
	look := map[int][]ref{}
	jobs := map[string]Job{}
	for node := range c.nodes {
		if len(look) == maxWaitNodes {
			break
		}
		for _, id := range c.nodes[node].jobs {
			rs := c.running[id]
			look[node] = append(look[node], ref{jobID: id, end: rs[0].alloc.expectedEnd()})
			jobs[id] = rs[0].alloc.Job
		}
	}
	var out []nodeWait
	probe := newStack(c, s.cfg, job, limits{only: -1, ignoreQuota: true})
	for _, node := range slices.Sorted(maps.Keys(look)) {
		refs := look[node]
		slices.SortStableFunc(refs, func(a, b ref) int {
			if a.end.IsZero() != b.end.IsZero() {
				if a.end.IsZero() {
					return 1
				}
				return -1
			}
			return cmp.Or(a.end.Compare(b.end), strings.Compare(a.jobID, b.jobID))
		})
		var released []Allocation
		w := nodeWait{node: node}
		known := true
		fits := false
		for _, r := range refs {
			if slices.ContainsFunc(w.jobs, func(j Job) bool { return j.ID == r.jobID }) {
				continue
			}
			released = append(released, c.takeJob(r.jobID)...)
			w.jobs = append(w.jobs, jobs[r.jobID])
			known = known && !r.end.IsZero()
			if r.end.After(w.start) {
				w.start = r.end
			}
			if fits = probe.fitsOn(node); fits {
				break
			}
		}
		for _, a := range released {
			_ = c.add(a)
		}
		if !fits {
			continue
		}
		if !known {
			w.start = time.Time{}
		}
		out = append(out, w)
	}
	// Soonest known start first, then fewest jobs to wait for, then node order.
	slices.SortStableFunc(out, func(a, b nodeWait) int {
		if a.start.IsZero() != b.start.IsZero() {
			if a.start.IsZero() {
				return 1
			}
			return -1
		}
		return cmp.Or(a.start.Compare(b.start), cmp.Compare(len(a.jobs), len(b.jobs)), cmp.Compare(a.node, b.node))
	})
	return out
}

// reserve holds nodes for a blocked job: one node per replica, the soonest ones.
func reserve(c *Cluster, job *Job, ws []nodeWait) (*Reservation, []bool) {
	replicas := max(job.Request.Replicas, 1)
	if len(ws) < replicas {
		return nil, nil
	}
	held := make([]bool, len(c.nodes))
	r := &Reservation{JobID: job.ID}
	known := true
	for _, w := range ws[:replicas] {
		held[w.node] = true
		r.NodeIDs = append(r.NodeIDs, c.nodes[w.node].node.ID)
		known = known && !w.start.IsZero()
		if w.start.After(r.Start) {
			r.Start = w.start
		}
	}
	if !known {
		r.Start = time.Time{}
	}
	return r, held
}

// waitPhrase says how many nodes would fit the job after how many running jobs finish,
// e.g. "3 nodes would fit after 2 research jobs finish".
func (s *Scheduler) waitPhrase(ws []nodeWait) string {
	if len(ws) == 0 {
		return ""
	}
	fewest := slices.MinFunc(ws, func(a, b nodeWait) int { return cmp.Compare(len(a.jobs), len(b.jobs)) })
	classes := map[string]bool{}
	for _, j := range fewest.jobs {
		pc, _ := s.cfg.class(j.Request.Class)
		classes[pc.Name] = true
	}
	what := "running jobs"
	if len(classes) == 1 {
		for name := range classes {
			what = name + " jobs"
		}
	}
	verb := "finish"
	if len(fewest.jobs) == 1 {
		what, verb = strings.TrimSuffix(what, "s"), "finishes"
	}
	nodes := plural(len(ws), "node")
	if len(ws) == maxWaitNodes {
		nodes = "at least " + nodes
	}
	return fmt.Sprintf("%s would fit after %d %s %s", nodes, len(fewest.jobs), what, verb)
}
