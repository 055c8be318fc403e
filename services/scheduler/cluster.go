package scheduler

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"time"
)

// gpuClass groups cards that match requests alike: same model and memory.
type gpuClass struct {
	model  string
	memory int64
}

// gpuState is one card's free capacity.
type gpuState struct {
	index     int // the device index the node reports
	class     int
	memory    int64
	freeMilli int
	freeMem   int64
	shares    int // fractional allocations on the card
	peers     uint64
	mig       bool
	migUsed   []bool
}

// nodeState is one node's free capacity and the packing caches derived from it.
type nodeState struct {
	node        Node
	freeCPU     int64
	freeRAM     int64
	freeScratch int64
	gpus        []gpuState
	idle        int64 // free milli-GPU on non-MIG cards
	copies      []int64
	cost        float64
	// packSig hashes what the packing measure reads (free CPU and the multiset of
	// card classes and free milli-GPU), so nodes alike share packing scores.
	packSig uint64
	// fullFree counts fully free cards and maxFree is the most free milli-GPU of a card
	// (MIG cards aside): what the capacity index files the node under.
	fullFree int
	maxFree  int
	// topo numbers the node's NVLink topology from 1; 0 means no NVLink.
	topo int
	// jobs lists the IDs of the jobs with a replica here, once each.
	jobs []string
	// staticSig hashes what never changes (pool, labels, spot, cordon, cards, links, MIG
	// layout); sig adds the free capacity. Nodes with equal sig place a job alike.
	staticSig uint64
	sig       uint64
}

// running is one allocation the cluster holds, with where it sits.
type running struct {
	alloc Allocation
	node  int
}

// Cluster is the scheduler's incrementally updated view of the cluster: free capacity per
// node and device, the running allocations, quota usage and the packing caches. Place
// reads it; Assume and Release change it. It is not safe for concurrent use.
type Cluster struct {
	now     time.Time
	nodes   []nodeState
	byID    map[string]int
	classes []gpuClass
	pack    packing
	// running holds the allocations by job ID; preemptible names the running jobs that
	// are preemptible, the only ones preemption looks at.
	running     map[string][]running
	preemptible map[string]bool
	quotas      *quotaLedger
	scratch     []int64
	// memo caches packing scores by node and option signature within one stack.
	memo  map[uint64]float64
	idx   capacityIndex
	picks map[pickKey]uint64
	// seen collects the node signatures one search has scored.
	seen map[uint64]struct{}
	// maxUnitPrice is the highest hourly price per GPU (per node for CPU nodes) of any node.
	maxUnitPrice float64
}

// NewCluster builds the cluster state from a snapshot's nodes, running allocations,
// quotas and workload. Inconsistent input (unknown nodes or devices, over-committed
// nodes) is an error naming what is wrong.
func NewCluster(snap Snapshot, cfg Config) (*Cluster, error) {
	c := &Cluster{now: snap.Now, byID: make(map[string]int, len(snap.Nodes)), memo: map[uint64]float64{},
		nodes: make([]nodeState, 0, len(snap.Nodes)), running: make(map[string][]running, len(snap.Running)),
		preemptible: map[string]bool{}, picks: map[pickKey]uint64{}, seen: map[uint64]struct{}{}}
	topos := map[string]int{}
	classIDs := map[gpuClass]int{}
	for i, n := range snap.Nodes {
		if err := checkNode(n); err != nil {
			return nil, fmt.Errorf("nodes[%d]: %w", i, err)
		}
		if _, dup := c.byID[n.ID]; dup {
			return nil, &FieldError{Field: fmt.Sprintf("nodes[%d].id", i), Message: fmt.Sprintf("node %q is listed twice", n.ID)}
		}
		c.byID[n.ID] = i
		ns := nodeState{node: n, freeCPU: n.CPUMilli, freeRAM: n.RAMMiB, freeScratch: n.ScratchMiB, gpus: make([]gpuState, len(n.GPUs))}
		pos := map[int]int{}
		for j, g := range n.GPUs {
			pos[g.Index] = j
		}
		for j, g := range n.GPUs {
			cl := gpuClass{model: g.Model, memory: g.MemoryMiB}
			id, ok := classIDs[cl]
			if !ok {
				id = len(c.classes)
				classIDs[cl] = id
				c.classes = append(c.classes, cl)
			}
			gs := gpuState{index: g.Index, class: id, memory: g.MemoryMiB, freeMilli: 1000, freeMem: g.MemoryMiB}
			for _, p := range g.NVLinkPeers {
				gs.peers |= 1 << uint(pos[p])
			}
			if len(g.MIG) > 0 {
				gs.mig = true
				gs.freeMilli = 0
				gs.migUsed = make([]bool, len(g.MIG))
			}
			ns.gpus[j] = gs
		}
		ns.topo = topologyOf(ns.gpus, topos)
		ns.staticSig = staticSigOf(n, ns.gpus)
		c.nodes = append(c.nodes, ns)
		c.maxUnitPrice = max(c.maxUnitPrice, unitPrice(n))
	}
	w := snap.Workload
	if len(w) == 0 {
		reqs := make([]Request, 0, len(snap.Running)+len(snap.Pending))
		for _, a := range snap.Running {
			reqs = append(reqs, a.Job.Request)
		}
		for _, j := range snap.Pending {
			reqs = append(reqs, j.Request)
		}
		w = WorkloadFromRequests(reqs)
	}
	if len(w) == 0 {
		w = defaultWorkload()
	}
	c.pack = newPacking(w, c.classes, c.nodes, cfg.StrandingWeight)
	c.idx = newCapacityIndex(c.nodes)
	c.scratch = make([]int64, len(c.pack.groups))
	for i := range c.nodes {
		c.nodes[i].copies = make([]int64, len(c.pack.groups))
		c.refresh(i)
	}
	quotas, err := newQuotaLedger(snap.Quotas)
	if err != nil {
		return nil, err
	}
	c.quotas = quotas
	for i, a := range snap.Running {
		if err := c.add(a); err != nil {
			return nil, fmt.Errorf("running[%d]: %w", i, err)
		}
	}
	return c, nil
}

// checkNode rejects node descriptions that cannot be scheduled against.
func checkNode(n Node) error {
	if n.ID == "" {
		return &FieldError{Field: "id", Message: "must not be empty"}
	}
	if n.CPUMilli < 0 || n.RAMMiB < 0 || n.ScratchMiB < 0 {
		return &FieldError{Field: "resources", Message: fmt.Sprintf("node %s has negative capacity", n.ID)}
	}
	if len(n.GPUs) > 64 {
		return &FieldError{Field: "gpus", Message: fmt.Sprintf("node %s has %d GPUs; at most 64 are supported", n.ID, len(n.GPUs))}
	}
	seen := map[int]bool{}
	for _, g := range n.GPUs {
		if seen[g.Index] {
			return &FieldError{Field: "gpus.index", Message: fmt.Sprintf("node %s lists GPU %d twice", n.ID, g.Index)}
		}
		seen[g.Index] = true
		if g.MemoryMiB < 0 {
			return &FieldError{Field: "gpus.memory_mib", Message: fmt.Sprintf("node %s GPU %d has negative memory", n.ID, g.Index)}
		}
	}
	for _, g := range n.GPUs {
		for _, p := range g.NVLinkPeers {
			if !seen[p] || p == g.Index {
				return &FieldError{Field: "gpus.nvlink_peers", Message: fmt.Sprintf("node %s GPU %d names NVLink peer %d, which is not another GPU of the node", n.ID, g.Index, p)}
			}
		}
	}
	return nil
}

// topologyOf numbers a node's NVLink topology (its cards' peer sets), alike nodes alike;
// 0 when no card has a peer.
func topologyOf(cards []gpuState, topos map[string]int) int {
	key := make([]byte, 0, 8*len(cards))
	linked := false
	for _, g := range cards {
		linked = linked || g.peers != 0
		key = binary.LittleEndian.AppendUint64(key, g.peers)
	}
	if !linked {
		return 0
	}
	id, ok := topos[string(key)]
	if !ok {
		id = len(topos) + 1
		topos[string(key)] = id
	}
	return id
}

// staticSigOf hashes the parts of a node that placement reads and that never change.
func staticSigOf(n Node, cards []gpuState) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	str := func(s string) {
		num(uint64(len(s)))
		h.Write([]byte(s))
	}
	str(n.Pool)
	str(n.Region)
	num(uint64(boolBits(n.Spot, n.Cordoned, n.Confidential, n.WholeGPUs)))
	num(uint64(n.PriceMicros))
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		str(k)
		str(n.Labels[k])
	}
	for p, g := range cards {
		num(uint64(g.class))
		num(g.peers)
		num(uint64(g.index))
		num(uint64(len(n.GPUs[p].MIG)))
		for _, m := range n.GPUs[p].MIG {
			str(m.Profile)
			num(uint64(m.MemoryMiB))
		}
	}
	return h.Sum64()
}

// unitPrice is a node's hourly price per GPU, or per node when it has none.
func unitPrice(n Node) float64 {
	if n.PriceMicros <= 0 {
		return 0
	}
	return float64(n.PriceMicros) / float64(max(len(n.GPUs), 1))
}

func boolBits(bs ...bool) int {
	v := 0
	for i, b := range bs {
		if b {
			v |= 1 << i
		}
	}
	return v
}

// refresh recomputes node i's packing caches after its free capacity changed.
func (c *Cluster) refresh(i int) {
	n := &c.nodes[i]
	n.idle, n.fullFree, n.maxFree = 0, 0, 0
	n.packSig = mix(uint64(n.freeCPU))
	for _, g := range n.gpus {
		if !g.mig {
			n.idle += int64(g.freeMilli)
			n.packSig += cardSig(&g)
			n.maxFree = max(n.maxFree, g.freeMilli)
			if g.freeMilli == 1000 && g.freeMem == g.memory {
				n.fullFree++
			}
		}
	}
	n.sig = mix(n.staticSig ^ n.packSig)
	n.sig = mix(n.sig ^ uint64(n.freeRAM))
	n.sig = mix(n.sig ^ uint64(n.freeScratch))
	for p := range n.gpus {
		g := &n.gpus[p]
		n.sig = mix(n.sig ^ uint64(p)<<48 ^ uint64(g.freeMilli)<<32 ^ uint64(g.freeMem))
		for s, used := range g.migUsed {
			if used {
				n.sig = mix(n.sig ^ uint64(p)<<16 ^ uint64(s))
			}
		}
	}
	c.idx.file(i, n.fullFree, n.maxFree)
	c.pack.copiesOf(n.gpus, n.copies)
	n.cost = c.pack.cost(n.idle, n.freeCPU, n.copies)
}

// mix is SplitMix64's finaliser: a cheap, well-spread 64-bit hash.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// cardSig hashes what the packing measure reads of a card.
func cardSig(g *gpuState) uint64 { return mix(uint64(g.class)<<16 | uint64(g.freeMilli)) }

// Now is the time the cluster was built for.
func (c *Cluster) Now() time.Time { return c.now }

// add records a running allocation, charging its node and quota.
func (c *Cluster) add(a Allocation) error {
	i, ok := c.byID[a.Replica.NodeID]
	if !ok {
		return fmt.Errorf("job %s replica %d: node %q is unknown", a.Job.ID, a.Replica.Replica, a.Replica.NodeID)
	}
	if err := c.apply(i, a.Replica); err != nil {
		return fmt.Errorf("job %s replica %d: %w", a.Job.ID, a.Replica.Replica, err)
	}
	if slices.ContainsFunc(c.running[a.Job.ID], func(r running) bool { return r.alloc.Replica.Replica == a.Replica.Replica }) {
		c.unapply(i, a.Replica)
		return fmt.Errorf("job %s replica %d is already running", a.Job.ID, a.Replica.Replica)
	}
	c.running[a.Job.ID] = append(c.running[a.Job.ID], running{alloc: a, node: i})
	c.chargeReplica(a.Job.Team, i, a.Replica, 1)
	if n := &c.nodes[i]; !slices.Contains(n.jobs, a.Job.ID) {
		n.jobs = append(n.jobs, a.Job.ID)
	}
	if a.Job.Request.Preemptible {
		c.preemptible[a.Job.ID] = true
	}
	return nil
}

// Assume commits a placement the caller is acting on: its replicas now hold their
// resources, starting at the cluster's time.
func (c *Cluster) Assume(job Job, p Placement) error {
	for k, rp := range p.Replicas {
		if err := c.add(Allocation{Job: job, Replica: rp, StartTime: c.now}); err != nil {
			for _, done := range p.Replicas[:k] {
				c.remove(job.ID, done.Replica)
			}
			return fmt.Errorf("assume job %s: %w", job.ID, err)
		}
	}
	return nil
}

// Release frees every replica of a job (it finished, failed or was preempted).
func (c *Cluster) Release(jobID string) error {
	if len(c.takeJob(jobID)) == 0 {
		return fmt.Errorf("release job %s: it holds no allocation", jobID)
	}
	return nil
}

// takeJob frees every replica of a job and returns them, for putting back with add.
func (c *Cluster) takeJob(jobID string) []Allocation {
	var out []Allocation
	for _, r := range slices.Clone(c.running[jobID]) {
		c.remove(jobID, r.alloc.Replica.Replica)
		out = append(out, r.alloc)
	}
	return out
}

// remove frees one replica.
func (c *Cluster) remove(jobID string, replica int) {
	rs := c.running[jobID]
	k := slices.IndexFunc(rs, func(r running) bool { return r.alloc.Replica.Replica == replica })
	if k < 0 {
		return
	}
	r := rs[k]
	c.chargeReplica(r.alloc.Job.Team, r.node, r.alloc.Replica, -1)
	c.unapply(r.node, r.alloc.Replica)
	rs = slices.Delete(rs, k, k+1)
	if !slices.ContainsFunc(rs, func(o running) bool { return o.node == r.node }) {
		n := &c.nodes[r.node]
		n.jobs = slices.DeleteFunc(n.jobs, func(id string) bool { return id == jobID })
	}
	if len(rs) > 0 {
		c.running[jobID] = rs
		return
	}
	delete(c.running, jobID)
	delete(c.preemptible, jobID)
}

// chargeReplica adds (sign 1) or removes (sign -1) a replica's resources to its team's
// quota usage; without quotas there is nothing to count.
func (c *Cluster) chargeReplica(team string, node int, rp ReplicaPlacement, sign int64) {
	if len(c.quotas.quotas) == 0 {
		return
	}
	c.replicaCharges(node, rp, func(model string, r int, v int64) { c.quotas.charge(team, model, r, sign*v) })
}

// replicaBorrows reports whether a replica is charged to quota its team borrowed: an
// entry it counts against uses more than its nominal of a resource the replica holds.
func (c *Cluster) replicaBorrows(team string, node int, rp ReplicaPlacement) bool {
	if len(c.quotas.quotas) == 0 {
		return false
	}
	borrows := false
	c.replicaCharges(node, rp, func(model string, r int, v int64) {
		borrows = borrows || (v > 0 && c.quotas.borrowing(team, model, r))
	})
	return borrows
}

// replicaCharges calls charge for what a replica counts against quotas: each device's
// milli-GPU under its model, and the CPU and RAM under the model of its first device
// (AnyModel without GPUs), as admission checks them.
func (c *Cluster) replicaCharges(node int, rp ReplicaPlacement, charge func(model string, r int, v int64)) {
	n := &c.nodes[node]
	model, first := AnyModel, true
	for _, d := range rp.Devices {
		p := n.gpuPos(d.GPUIndex)
		if p < 0 {
			continue
		}
		m := c.classes[n.gpus[p].class].model
		if first {
			model, first = m, false
		}
		charge(m, resGPU, int64(d.Milli))
	}
	charge(model, resCPU, rp.CPUMilli)
	charge(model, resRAM, rp.RAMMiB)
}

// gpuPos maps a device index to its position in the node's card list, or -1.
func (n *nodeState) gpuPos(index int) int {
	for p := range n.gpus {
		if n.gpus[p].index == index {
			return p
		}
	}
	return -1
}

// apply takes a replica's resources from node i, refusing anything that over-commits.
func (c *Cluster) apply(i int, rp ReplicaPlacement) error {
	n := &c.nodes[i]
	if rp.CPUMilli > n.freeCPU || rp.RAMMiB > n.freeRAM || rp.ScratchMiB > n.freeScratch {
		return fmt.Errorf("node %s: not enough free CPU, RAM or scratch", n.node.ID)
	}
	for k, d := range rp.Devices {
		p := n.gpuPos(d.GPUIndex)
		if p < 0 {
			return fmt.Errorf("node %s has no GPU %d", n.node.ID, d.GPUIndex)
		}
		g := &n.gpus[p]
		if d.MIGSlice != "" {
			s := slices.IndexFunc(n.node.GPUs[p].MIG, func(m MIGSlice) bool { return m.ID == d.MIGSlice })
			if s < 0 || g.migUsed[s] || slices.ContainsFunc(rp.Devices[:k], func(o DeviceAssignment) bool { return o.MIGSlice == d.MIGSlice }) {
				return fmt.Errorf("node %s GPU %d: MIG slice %q is unknown or taken", n.node.ID, d.GPUIndex, d.MIGSlice)
			}
			continue
		}
		taken, mem := 0, int64(0)
		for _, o := range rp.Devices[:k+1] {
			if o.GPUIndex == d.GPUIndex && o.MIGSlice == "" {
				taken += o.Milli
				mem += o.MemoryMiB
			}
		}
		if g.mig || d.Milli <= 0 || taken > g.freeMilli || mem > g.freeMem {
			return fmt.Errorf("node %s GPU %d cannot take %d milli-GPU and %d MiB", n.node.ID, d.GPUIndex, d.Milli, d.MemoryMiB)
		}
	}
	n.freeCPU -= rp.CPUMilli
	n.freeRAM -= rp.RAMMiB
	n.freeScratch -= rp.ScratchMiB
	for _, d := range rp.Devices {
		g := &n.gpus[n.gpuPos(d.GPUIndex)]
		if d.MIGSlice != "" {
			g.migUsed[slices.IndexFunc(n.node.GPUs[n.gpuPos(d.GPUIndex)].MIG, func(m MIGSlice) bool { return m.ID == d.MIGSlice })] = true
			continue
		}
		g.freeMilli -= d.Milli
		g.freeMem -= d.MemoryMiB
		if d.Milli < 1000 {
			g.shares++
		}
	}
	c.refresh(i)
	return nil
}

// unapply returns a replica's resources to node i.
func (c *Cluster) unapply(i int, rp ReplicaPlacement) {
	n := &c.nodes[i]
	n.freeCPU += rp.CPUMilli
	n.freeRAM += rp.RAMMiB
	n.freeScratch += rp.ScratchMiB
	for _, d := range rp.Devices {
		p := n.gpuPos(d.GPUIndex)
		g := &n.gpus[p]
		if d.MIGSlice != "" {
			g.migUsed[slices.IndexFunc(n.node.GPUs[p].MIG, func(m MIGSlice) bool { return m.ID == d.MIGSlice })] = false
			continue
		}
		g.freeMilli += d.Milli
		g.freeMem += d.MemoryMiB
		if d.Milli < 1000 {
			g.shares--
		}
	}
	c.refresh(i)
}

// NodeFree is a node's free capacity, for callers that display or check it.
type NodeFree struct {
	CPUMilli   int64
	RAMMiB     int64
	ScratchMiB int64
	GPUs       []GPUFree
}

// GPUFree is one card's free capacity; FreeMIG lists its free MIG slice IDs.
type GPUFree struct {
	Index         int
	FreeMilli     int
	FreeMemoryMiB int64
	FreeMIG       []string
}

// Free returns a node's free capacity.
func (c *Cluster) Free(nodeID string) (NodeFree, bool) {
	i, ok := c.byID[nodeID]
	if !ok {
		return NodeFree{}, false
	}
	n := &c.nodes[i]
	f := NodeFree{CPUMilli: n.freeCPU, RAMMiB: n.freeRAM, ScratchMiB: n.freeScratch}
	for p, g := range n.gpus {
		gf := GPUFree{Index: g.index, FreeMilli: g.freeMilli, FreeMemoryMiB: g.freeMem}
		for s, used := range g.migUsed {
			if !used {
				gf.FreeMIG = append(gf.FreeMIG, n.node.GPUs[p].MIG[s].ID)
			}
		}
		f.GPUs = append(f.GPUs, gf)
	}
	return f, true
}

// Running returns the allocations the cluster holds, assumed ones included, by job ID
// and replica.
func (c *Cluster) Running() []Allocation {
	var out []Allocation
	for _, id := range slices.Sorted(maps.Keys(c.running)) {
		for _, r := range c.running[id] {
			out = append(out, r.alloc)
		}
	}
	slices.SortStableFunc(out, func(a, b Allocation) int {
		return cmp.Or(strings.Compare(a.Job.ID, b.Job.ID), cmp.Compare(a.Replica.Replica, b.Replica.Replica))
	})
	return out
}
