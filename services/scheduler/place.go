package scheduler

import "fmt"

// Scheduler places jobs. It holds only its configuration: every decision is a function
// of the cluster state and the job handed to it.
type Scheduler struct {
	cfg Config
}

// New returns a scheduler for a validated configuration.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	return &Scheduler{cfg: cfg}, nil
}

// Config returns the scheduler's configuration.
func (s *Scheduler) Config() Config { return s.cfg }

// Explanation says why a job was not placed: a sentence for people and, per reason, how
// many nodes were rejected for it.
type Explanation struct {
	Reason     string
	Rejections map[string]int
	Nodes      int
}

// Place finds where every replica of the job goes in the cluster as it stands, without
// changing it: the dispatcher's per-job path. A job that fits somewhere is always
// placed. A gang is placed whole or not at all. Commit the result with Cluster.Assume.
func (s *Scheduler) Place(c *Cluster, job Job) (Placement, bool, Explanation) {
	return s.place(c, &job, anywhere())
}

// place is Place within limits.
func (s *Scheduler) place(c *Cluster, job *Job, lim limits) (Placement, bool, Explanation) {
	if err := validateShape(job.Request, s.cfg); err != nil {
		return Placement{}, false, Explanation{Reason: "invalid request: " + err.Error(), Nodes: len(c.nodes)}
	}
	replicas := max(job.Request.Replicas, 1)
	applied := make([]ReplicaPlacement, 0, replicas)
	// Replicas after the first see the earlier ones' resources taken; all are returned
	// before place does.
	defer func() {
		for _, rp := range applied {
			c.chargeReplica(job.Team, c.byID[rp.NodeID], rp, -1)
			c.unapply(c.byID[rp.NodeID], rp)
		}
	}()
	for r := 0; r < replicas; r++ {
		st := newStack(c, s.cfg, job, lim)
		o, ok := st.best()
		if !ok {
			ex := st.explain()
			if r > 0 {
				ex.Reason = fmt.Sprintf("only %d of %d gang replicas fit at once: %s", r, replicas, ex.Reason)
				ex.Rejections[RejectGangSplit] = replicas - r
			}
			return Placement{}, false, ex
		}
		rp := st.replica(o, r)
		if replicas == 1 {
			// Nothing else to place: no need to take the room and give it back.
			return Placement{JobID: job.ID, Replicas: []ReplicaPlacement{rp}}, true, Explanation{}
		}
		if err := c.apply(o.node, rp); err != nil {
			return Placement{}, false, Explanation{Reason: fmt.Sprintf("internal error: chosen placement does not apply: %v", err), Nodes: len(c.nodes)}
		}
		c.chargeReplica(job.Team, o.node, rp, 1)
		applied = append(applied, rp)
	}
	return Placement{JobID: job.ID, Replicas: append([]ReplicaPlacement(nil), applied...)}, true, Explanation{}
}
