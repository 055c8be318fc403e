// Package pools runs elastic node pools: a pool's model (provider, region and zone,
// node template, capacity type, size limits, scale-down policy) with validation that
// names the field, providers behind one small interface (static: agents join by hand;
// exec: operator scripts that create and delete machines, called with JSON on stdin
// the way Slurm's ResumeProgram and SuspendProgram are), and the reconciliation of a
// provider's list against the machines Gantry asked for, so that none leaks.
//
// The autoscaler's decisions are pure (subpackage autoscale, which asks the scheduler
// with hypothetical nodes of each pool's template); this package gives them effect:
// it creates and deletes machines, drains nodes before they go, records every decision
// as a pool event with its reason, and audits it.
package pools
