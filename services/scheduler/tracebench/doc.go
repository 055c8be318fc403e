// Package tracebench replays the Alibaba GPU cluster trace (openb, used by the FGD paper)
// exactly as PROTOCOL.md specifies: workload inflation by seeded sampling, one pod at a
// time with no departures, a fixed random node priority for ties, and the allocation and
// fragmentation metrics binned by arrived load. It re-implements the paper's baselines
// (random, firstfit, dotprod, gpuclustering, gpupacking, bestfit, fgd) and runs Gantry's
// production placement (scheduler.Place, default configuration) on the same seeds.
// Each run also gets a ceiling: the most any placement could reach that places what
// the run placed before its first failed sharing pod, from the LP relaxation of packing
// the shares (ceiling.go), so a figure shows how much of the gap is left to win.
//
// The trace files are read from ../shared at run time and never copied into the
// repository; tests that need them skip with a message when they are absent.
package tracebench
