package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
)

// SlurmConfig tunes how the leader drives the pools whose provider is slurm.
type SlurmConfig struct {
	// Follow is how often Slurm is polled, the back-off while it does not answer, and
	// how long a job may be missing before it counts as lost.
	Follow slurm.FollowConfig
	// InventoryEvery is how often each partition's nodes are read again.
	InventoryEvery time.Duration
	// LogChunk is the most bytes of one log file stored per pass.
	LogChunk int
	// Runner runs a pool's commands; nil runs them on this host (slurm.ExecRunner).
	Runner func(slurm.Config) slurm.Runner
}

// DefaultSlurmConfig is what `gantry serve` uses.
func DefaultSlurmConfig() SlurmConfig {
	return SlurmConfig{Follow: slurm.DefaultFollowConfig(), InventoryEvery: 30 * time.Second, LogChunk: 256 << 10}
}

// SlurmPools is Gantry's side of the pools whose provider is slurm, run on the
// leader next to the dispatch loop. The scheduler places jobs on a Slurm pool's
// nodes like on any other (quota, fair share, admission); instead of leasing the
// allocation to an agent, this submits the attempt to Slurm, which places it on its
// nodes. It then follows the Slurm job, applies what happens to it to the Gantry
// job (services/slurm's Decide), stores its output in the log store and its
// accounting on the allocation for the ledger, and stops it when Gantry cancels,
// preempts or holds the job. It also keeps the partition's nodes as read-only
// Gantry nodes. Everything it needs is in the database, so a new leader carries on.
type SlurmPools struct {
	svc *Service
	cfg SlurmConfig

	// installation is this database's tag in the names of its Slurm jobs.
	installation string

	mu    sync.Mutex
	pools map[int64]*slurmPool
}

// installationSetting keeps the tag that tells this installation's Slurm jobs from
// those of another Gantry (or of this one before its database was replaced).
const installationSetting = "slurm.installation"

func newInstallation() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// slurmPool is one pool as the loop drives it.
type slurmPool struct {
	pool models.NodePool
	b    *slurm.Backend
	f    *slurm.Follower
	// rows maps the Slurm job ids followed to their slurm_jobs rows.
	rows map[string]int64
	// next is when the pool is polled again: later while Slurm does not answer.
	next     time.Time
	failures int
	// inventoryAt is the last successful read of the partition's nodes.
	inventoryAt time.Time
	// conf is the confStamp of the slurm.conf at that read: once it changes, the
	// nodes and the cluster's name are read again before anything is asked of Slurm.
	conf string
	// down says the pool's nodes were marked down because Slurm does not answer.
	down string
	// polledAt is the last poll Slurm answered.
	polledAt time.Time
	// foreign is the last list of jobs outside Gantry written to the store.
	foreign []models.SlurmForeignJob
}

// SlurmPools returns the driver of the Slurm pools over this dispatch service.
func (s *Service) SlurmPools(cfg SlurmConfig) *SlurmPools {
	if cfg.Runner == nil {
		cfg.Runner = func(c slurm.Config) slurm.Runner {
			return slurm.NewExecRunner(c.BinDir, c.SlurmConf, c.CommandTimeout())
		}
	}
	return &SlurmPools{svc: s, cfg: cfg, pools: map[int64]*slurmPool{}}
}

// Run drives the Slurm pools until ctx ends, every Follow.Interval.
func (p *SlurmPools) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Follow.Interval)
	defer t.Stop()
	for {
		p.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Tick runs one pass over every Slurm pool that is due; errors are logged and the
// pass is retried on the next tick.
func (p *SlurmPools) Tick(ctx context.Context) {
	pools, err := p.load(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.svc.log.Error("cannot read the Slurm pools", "err", err)
		}
		return
	}
	now := p.svc.now().UTC()
	for _, sp := range pools {
		if now.Before(sp.next) {
			continue
		}
		if err := p.tickPool(ctx, sp, now); err != nil && ctx.Err() == nil {
			p.svc.log.Error("Slurm pool pass failed", "pool", sp.pool.Name, "err", err)
		}
	}
}

// Health says whether each Slurm pool's cluster answered its last poll, by pool name.
func (p *SlurmPools) Health() map[string]slurm.Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]slurm.Health, len(p.pools))
	for _, sp := range p.pools {
		out[sp.pool.Name] = sp.f.Health()
	}
	return out
}

// load reads the Slurm pools, keeping the state of those whose configuration did not
// change. A pool whose configuration is unusable is logged and left out.
func (p *SlurmPools) load(ctx context.Context) ([]*slurmPool, error) {
	all, err := p.svc.store.NodePools(ctx)
	if err != nil {
		return nil, err
	}
	for _, pool := range all {
		if pool.Provider == "slurm" && p.installation == "" {
			if p.installation, err = p.svc.store.SettingOrInit(ctx, installationSetting, newInstallation()); err != nil {
				return nil, err
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[int64]bool{}
	var out []*slurmPool
	for _, pool := range all {
		if pool.Provider != "slurm" {
			continue
		}
		seen[pool.ID] = true
		sp := p.pools[pool.ID]
		if sp == nil || sp.pool.ProviderConfig != pool.ProviderConfig {
			cfg, err := slurm.ParseConfig(pool.ProviderConfig)
			cfg.Installation = p.installation
			if err == nil {
				sp, err = p.newPool(pool, cfg)
			}
			if err != nil {
				p.svc.log.Error("Slurm pool has an unusable configuration; fix it with gantry pool apply", "pool", pool.Name, "err", err)
				delete(p.pools, pool.ID)
				continue
			}
			p.pools[pool.ID] = sp
		}
		sp.pool = pool
		out = append(out, sp)
	}
	for id := range p.pools {
		if !seen[id] {
			delete(p.pools, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pool.ID < out[j].pool.ID })
	return out, nil
}

func (p *SlurmPools) newPool(pool models.NodePool, cfg slurm.Config) (*slurmPool, error) {
	b, err := slurm.New(cfg, p.cfg.Runner(cfg))
	if err != nil {
		return nil, err
	}
	return &slurmPool{pool: pool, b: b, f: slurm.NewFollower(b, p.cfg.Follow, p.svc.now), rows: map[string]int64{}}, nil
}

// tickPool runs one pass over one pool: its nodes when due, stops Gantry asked for,
// a poll of its jobs, new submissions, and their output.
func (p *SlurmPools) tickPool(ctx context.Context, sp *slurmPool, now time.Time) error {
	conf := confStamp(sp.b.Config().SlurmConf)
	if sp.down != "" || sp.inventoryAt.IsZero() || now.Sub(sp.inventoryAt) >= p.cfg.InventoryEvery || conf != sp.conf {
		wasDown := sp.down != ""
		if err := p.syncNodes(ctx, sp, now); err != nil {
			return p.unreachable(ctx, sp, now, err)
		}
		sp.conf = conf
		if wasDown {
			// Slurm answers again; its nodes' states came back with its inventory.
			if err := p.noteAll(ctx, sp, "slurm-reachable", "Slurm answers again"); err != nil {
				return err
			}
		}
	}
	rows, err := p.track(ctx, sp)
	if err != nil {
		return err
	}
	if err := p.stopUnwanted(ctx, sp, rows, now); err != nil {
		return err
	}
	if err := sp.f.Poll(ctx, func(ctx context.Context, e slurm.Event) error { return p.apply(ctx, sp, e) }); err != nil {
		return p.unreachable(ctx, sp, now, err)
	}
	sp.failures, sp.next, sp.polledAt = 0, time.Time{}, now
	if err := p.syncForeign(ctx, sp); err != nil {
		return err
	}
	if err := p.submit(ctx, sp); err != nil {
		return err
	}
	return p.shipLogs(ctx, sp)
}

// track follows every open Slurm job of the pool, with what was last seen of it
// (after a restart, or a new leader, the follower starts from the database), and no
// other: one an admin forgot (ForgetSlurmJobs, on any replica) is no longer followed.
func (p *SlurmPools) track(ctx context.Context, sp *slurmPool) ([]models.SlurmJob, error) {
	rows, err := p.svc.store.OpenSlurmJobs(ctx, sp.pool.ID)
	if err != nil {
		return nil, err
	}
	open := make(map[string]bool, len(rows))
	for _, r := range rows {
		open[r.SlurmJobID] = open[r.SlurmJobID] || !r.Done
	}
	for id := range sp.rows {
		if !open[id] {
			sp.f.Untrack(id)
			delete(sp.rows, id)
		}
	}
	for _, r := range rows {
		if r.Done {
			continue
		}
		if _, ok := sp.rows[r.SlurmJobID]; ok {
			continue
		}
		seen, err := decodeSeen(r.Seen)
		if err != nil {
			return nil, fmt.Errorf("Slurm job %s of job %d: %w", r.SlurmJobID, r.JobID, err)
		}
		sp.f.Track(slurm.Tracked{SlurmID: r.SlurmJobID, JobID: r.JobID, Attempt: r.CurrentAttempt, Submitted: r.Attempt, Seen: seen})
		sp.rows[r.SlurmJobID] = r.ID
	}
	return rows, nil
}

// unreachable handles a pool whose Slurm does not answer: a transient failure backs
// off and marks the pool's nodes down with Slurm's words, so that no new job is
// placed there, while jobs already there keep their last known state.
func (p *SlurmPools) unreachable(ctx context.Context, sp *slurmPool, now time.Time, cause error) error {
	sp.failures++
	sp.next = now.Add(slurm.Backoff(p.cfg.Follow.Interval, p.cfg.Follow.MaxBackoff, sp.failures))
	reason := "Slurm does not answer: " + cause.Error()
	var rejected *slurm.RejectedError
	var moved *clusterMovedError
	switch {
	case errors.As(cause, &rejected):
		reason = "Slurm refuses the pool's configuration: " + cause.Error()
	case errors.As(cause, &moved):
		reason = clusterMovedPrefix + cause.Error()
	}
	if sp.down != "" && (moved == nil || sp.down == reason) {
		// Noted when the outage began; a pool found on another cluster says so, and
		// is marked so, which lets an admin forget its jobs (ForgetSlurmJobs).
		return nil
	}
	if moved != nil {
		if err := p.markMoved(ctx, sp, now, moved, reason); err != nil {
			return err
		}
	}
	nodes, err := p.svc.store.NodesOfPool(ctx, sp.pool.ID)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.State == models.NodeDown && n.StateReason == reason {
			continue
		}
		if err := p.svc.store.SetNodeState(ctx, n.ID, []string{n.State}, models.NodeDown, reason); err != nil && !errors.Is(err, store.ErrStale) {
			return err
		}
	}
	sp.down = reason
	if err := p.noteAll(ctx, sp, "slurm-unreachable", reason+"; the job keeps its last known state until Slurm answers again"); err != nil {
		return err
	}
	p.svc.log.Warn("Slurm pool unreachable; retrying with back-off", "pool", sp.pool.Name, "err", cause, "retry_in", sp.next.Sub(now))
	return nil
}

// noteAll notes msg on every job of the pool that Slurm holds or that waits to be
// submitted: the job's own page then says why nothing moves.
func (p *SlurmPools) noteAll(ctx context.Context, sp *slurmPool, reason, msg string) error {
	var ids []int64
	rows, err := p.svc.store.OpenSlurmJobs(ctx, sp.pool.ID)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if !r.Done {
			ids = append(ids, r.JobID)
		}
	}
	allocs, err := p.svc.store.SlurmAllocationsToSubmit(ctx, sp.pool.ID)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		ids = append(ids, a.JobID)
	}
	jobs, err := p.svc.store.JobsByIDs(ctx, ids)
	if err != nil {
		return err
	}
	for i := range jobs {
		if models.IsTerminal(jobs[i].State) {
			continue
		}
		if err := p.note(ctx, &jobs[i], reason, msg); err != nil {
			return err
		}
	}
	return nil
}

// syncForeign keeps the partition's jobs that Gantry did not submit and that wait or
// run, as the last poll saw them, for the cluster view, utilisation and the
// scheduler's snapshot. A job whose node list or GPUs cannot be read is logged and
// left out.
func (p *SlurmPools) syncForeign(ctx context.Context, sp *slurmPool) error {
	var jobs []models.SlurmForeignJob
	ours := "gantry-" + p.installation + "-"
	for _, j := range sp.f.Foreign() {
		if j.Ended() || strings.HasPrefix(j.Name, ours) {
			continue // over; or this installation's, no longer followed after a restart
		}
		fj, err := slurm.ForeignJob(sp.pool.Name, sp.b.Config(), j)
		if err != nil {
			p.svc.log.Warn("cannot read a Slurm job submitted outside Gantry", "pool", sp.pool.Name, "slurm_job", j.ID, "err", err)
			continue
		}
		jobs = append(jobs, fj)
	}
	if slices.EqualFunc(jobs, sp.foreign, sameForeign) {
		return nil
	}
	if err := p.svc.store.SyncForeignJobs(ctx, sp.pool.ID, jobs); err != nil {
		return err
	}
	sp.foreign = jobs
	p.svc.Kick()
	return nil
}

func sameForeign(a, b models.SlurmForeignJob) bool {
	return a.SlurmJobID == b.SlurmJobID && a.State == b.State && a.Reason == b.Reason && a.Nodes == b.Nodes && a.GPUs == b.GPUs
}
