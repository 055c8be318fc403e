// Package scheduler decides which job runs where. It is pure: it reads a Snapshot (nodes
// with their devices, running allocations, pending jobs, quotas, usage history, the
// observed workload and the current time as a value) and returns decisions. It has no
// database, clock, network or logger, so it is tested and benchmarked in isolation and
// replays real traces (see the tracebench subpackage and `gantry bench trace`).
//
// # Structure
//
// The structure follows HashiCorp Nomad's scheduler: a placement is chosen by a chain
// built in one place (newStack). Feasibility checkers reject nodes, each rejection
// counted under its reason; the device stage turns a node into options (which cards,
// which share, which MIG slice); quota admission filters options; scorers add their
// values; the highest total wins and ties go to the node listed first. The same chain
// serves both entry points:
//
//   - (*Scheduler).Place places one job against a *Cluster, the incrementally updated
//     cluster state (NewCluster, Assume, Release). It is the dispatcher's per-job path
//     and the policy `gantry bench trace` replays.
//   - (*Scheduler).Schedule runs a whole cycle over a Snapshot: ordering, quotas, gangs,
//     backfill and preemption, returning a Plan.
//
// # Speed
//
// A capacity index (bitsets of nodes by fully free cards and by largest free share)
// lets a placement visit only nodes that can hold its GPUs, in node order; a node in
// the same state as one already scored is skipped, as it would score the same and lose
// the tie; packing scores are memoised by node state. On clusters above FullScanNodes
// (2,048) a replica is scored on the first SampleNodes (64) feasible nodes, as
// kube-scheduler and Nomad bound their scoring. A full cycle remembers jobs that failed
// and fails at once any later job of the same shape that asks for no less.
//
// # Placement
//
// The main scorer descends a fragmentation measure in the spirit of FGD (Weng et al.,
// USENIX ATC'23), measured against the workload's request shapes (WorkloadFromRequests).
// Where FGD asks how much idle GPU the next task of a shape could not use, Gantry asks
// how much would stay unused if the node were filled with copies of the shape, given its
// free CPU too, and adds the GPU its CPU cannot feed: that catches the GPUs FGD strands
// on nodes whose CPU ran out. Shapes weigh by frequency times their scarcity (all nodes
// over those that could host one), so rare large jobs keep the few nodes that fit them,
// where FGD drops shapes outside the top 95% of requests. A share also pays for the card
// capacity it wastes against the packing patterns of the workload: the cutting-stock LP
// over the observed per-card request sizes prices each size in cards, and a share should
// leave its card able to earn what the card could before, less its own price
// (patterns.go). That steers shares into the combinations an optimal offline packing
// would use instead of pairs that strand gaps no request fills. Further scorers keep
// multi-GPU jobs on NVLink peers, give a job that names its GPU memory the smallest card
// that fits, steer job kinds to GPU classes, prefer spot nodes for jobs that allow them,
// and prefer cheaper nodes (hourly price per GPU) for every job. Spot nodes, and nodes of
// pools that take only jobs allowing spot, never take a job that does not allow spot.
// A node's runtime runs plain commands, container images or both (Node.Runs); a job
// goes only where its kind runs.
//
// # The cycle
//
// Schedule orders pending jobs by class (production > research > test by default), and
// within a class by ageing (linear up to AgeHorizon) plus fair share (Slurm's
// 2^(-usage/entitlement), with a team's exponentially decayed dominant-resource share of
// recent usage against its share of the nominal quotas). Quotas follow Kueue's
// ClusterQueue and cohort model: per team and GPU model (or AnyModel), for GPUs, CPU and
// RAM each, a nominal amount, a borrowing limit and a lending limit (CPU and RAM count
// under the model of the replica's GPUs, or AnyModel without GPUs; sums saturate, so
// unlimited and huge figures never overflow); admission checks them per option, so a
// job goes to a model its team may still use, and a job left waiting says which
// resource's quota holds it. A job of a class that may preempt and does not fit may
// evict preemptible jobs of strictly lower classes only: per replica the cheapest
// minimal set (quota borrowed from the cohort first, then fewest GPUs, then least
// progress since the last checkpoint). The first job blocked for lack of capacity reserves the
// nodes where running jobs end soonest; later jobs start elsewhere, or on those nodes only
// when their expected run time ends before the reservation starts. Gangs are placed whole
// or not at all. Every job left waiting gets a reason in words and per-reason node counts.
//
// Devices: whole GPUs, shares of one GPU in milli-GPU with a GPU-memory limit (packed
// onto cards already shared), and MIG slices as devices of their own. Requests that can
// never fit are rejected at submission by ValidateRequest with a *FieldError naming the
// field and the largest offer the cluster has.
package scheduler
