package scheduler

import "slices"

// Rejection reasons: the first feasibility check a node fails is counted under its name.
const (
	RejectCordoned  = "cordoned"
	RejectRuntime   = "runtime"
	RejectPool      = "pool"
	RejectPlacement = "placement policy"
	RejectWholeGPUs = "whole gpus only"
	RejectSelector  = "node selector"
	RejectSpot      = "spot not allowed"
	RejectCPU       = "cpu"
	RejectRAM       = "ram"
	RejectScratch   = "scratch"
	RejectGPUModel  = "gpu model"
	RejectGPUCount  = "gpu count"
	RejectGPUsBusy  = "gpus busy"
	RejectNVLink    = "nvlink"
	RejectMIG       = "mig profile"
	RejectMIGBusy   = "mig busy"
	RejectQuota     = "quota"
	RejectReserved  = "reserved"
	RejectNoNodes   = "no nodes"
	RejectGangSplit = "gang"
)

// reason indexes the rejection counters; String gives the exported names.
type reason uint8

const (
	reasonNone reason = iota
	reasonCordoned
	reasonRuntime
	reasonPool
	reasonPlacement
	reasonWholeGPUs
	reasonSelector
	reasonSpot
	reasonCPU
	reasonRAM
	reasonScratch
	reasonGPUModel
	reasonGPUCount
	reasonGPUsBusy
	reasonNVLink
	reasonMIG
	reasonMIGBusy
	reasonQuota
	reasonReserved
	numReasons
)

// String is the reason's exported name.
func (r reason) String() string {
	switch r {
	case reasonCordoned:
		return RejectCordoned
	case reasonRuntime:
		return RejectRuntime
	case reasonPool:
		return RejectPool
	case reasonPlacement:
		return RejectPlacement
	case reasonWholeGPUs:
		return RejectWholeGPUs
	case reasonSelector:
		return RejectSelector
	case reasonSpot:
		return RejectSpot
	case reasonCPU:
		return RejectCPU
	case reasonRAM:
		return RejectRAM
	case reasonScratch:
		return RejectScratch
	case reasonGPUModel:
		return RejectGPUModel
	case reasonGPUCount:
		return RejectGPUCount
	case reasonGPUsBusy:
		return RejectGPUsBusy
	case reasonNVLink:
		return RejectNVLink
	case reasonMIG:
		return RejectMIG
	case reasonMIGBusy:
		return RejectMIGBusy
	case reasonQuota:
		return RejectQuota
	case reasonReserved:
		return RejectReserved
	}
	return ""
}

// checker is one feasibility test over a node, after Nomad's FeasibilityChecker: it
// returns reasonNone when the node passes, else why it fails.
type checker interface {
	check(n *nodeState) reason
}

type cordonChecker struct{}

func (cordonChecker) check(n *nodeState) reason {
	if n.node.Cordoned {
		return reasonCordoned
	}
	return reasonNone
}

// runtimeChecker keeps a job off nodes whose runtime cannot start it: a container
// image off process nodes, a plain command off docker and podman nodes.
type runtimeChecker struct{ container bool }

func (c runtimeChecker) check(n *nodeState) reason {
	if !n.node.Runs.Starts(c.container) {
		return reasonRuntime
	}
	return reasonNone
}

type poolChecker struct{ pool string }

func (c poolChecker) check(n *nodeState) reason {
	if n.node.Pool != c.pool {
		return reasonPool
	}
	return reasonNone
}

// placementChecker enforces the project's placement policy: allowed pools and regions,
// and confidential-computing nodes only.
type placementChecker struct{ p Policy }

func (c placementChecker) check(n *nodeState) reason {
	switch {
	case len(c.p.Pools) > 0 && !slices.Contains(c.p.Pools, n.node.Pool),
		len(c.p.Regions) > 0 && !slices.Contains(c.p.Regions, n.node.Region),
		c.p.ConfidentialOnly && !n.node.Confidential:
		return reasonPlacement
	}
	return reasonNone
}

// wholeChecker keeps a share of a GPU, or a MIG slice, off nodes that give GPUs only whole.
type wholeChecker struct{}

func (wholeChecker) check(n *nodeState) reason {
	if n.node.WholeGPUs {
		return reasonWholeGPUs
	}
	return reasonNone
}

type selectorChecker struct{ labels map[string]string }

func (c selectorChecker) check(n *nodeState) reason {
	for k, v := range c.labels {
		if got, ok := n.node.Labels[k]; !ok || got != v {
			return reasonSelector
		}
	}
	return reasonNone
}

type spotChecker struct{}

func (spotChecker) check(n *nodeState) reason {
	if n.node.Spot {
		return reasonSpot
	}
	return reasonNone
}

// resourceChecker tests free CPU, RAM and scratch disk.
type resourceChecker struct{ cpu, ram, scratch int64 }

func (c resourceChecker) check(n *nodeState) reason {
	switch {
	case n.freeCPU < c.cpu:
		return reasonCPU
	case n.freeRAM < c.ram:
		return reasonRAM
	case n.freeScratch < c.scratch:
		return reasonScratch
	}
	return reasonNone
}

// nodeCheckers are the checks that need only the node, cheapest and most selective first.
func nodeCheckers(d *demand) []checker {
	r := d.req
	cs := make([]checker, 2, 7)
	cs[0], cs[1] = cordonChecker{}, runtimeChecker{r.Container}
	if r.Pool != "" {
		cs = append(cs, poolChecker{r.Pool})
	}
	if !r.Policy.any() {
		cs = append(cs, placementChecker{r.Policy})
	}
	if r.GPUMilli > 0 || r.MIGProfile != "" {
		cs = append(cs, wholeChecker{})
	}
	if len(r.NodeSelector) > 0 {
		cs = append(cs, selectorChecker{r.NodeSelector})
	}
	if !r.SpotAllowed {
		cs = append(cs, spotChecker{})
	}
	return append(cs, resourceChecker{cpu: r.CPUMilli, ram: r.RAMMiB, scratch: r.ScratchMiB})
}

// rejections counts nodes per reason.
type rejections [numReasons]int

func (r *rejections) toMap() map[string]int {
	m := map[string]int{}
	for i, n := range r {
		if n > 0 {
			m[reason(i).String()] = n
		}
	}
	return m
}
