package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// explain turns the stack's rejection counts into an Explanation.
func (s *stack) explain() Explanation {
	ex := Explanation{Rejections: s.rejected.toMap(), Nodes: len(s.c.nodes)}
	if len(s.c.nodes) == 0 {
		ex.Reason = "the cluster has no nodes"
		ex.Rejections[RejectNoNodes] = 1
		return ex
	}
	type count struct {
		reason string
		n      int
	}
	var counts []count
	for r, n := range ex.Rejections {
		counts = append(counts, count{r, n})
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.reason, b.reason)) })
	var parts []string
	for _, c := range counts {
		parts = append(parts, s.phrase(c.reason, c.n))
	}
	ex.Reason = fmt.Sprintf("no node has room for %s: %s", s.d.describe(), strings.Join(parts, "; "))
	return ex
}

// phrase says in words why n nodes were rejected for a reason.
func (s *stack) phrase(reason string, n int) string {
	r := s.d.req
	nodes := plural(n, "node")
	// verb agrees with the count: "1 node has", "2 nodes have".
	verb := func(one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	switch reason {
	case RejectCordoned:
		return fmt.Sprintf("%s cordoned", nodes)
	case RejectRuntime:
		run := verb("runs", "run")
		if r.Container {
			return fmt.Sprintf("%s %s plain commands only and the job names a container image", nodes, run)
		}
		return fmt.Sprintf("%s %s containers only and the job runs a plain command", nodes, run)
	case RejectPool:
		return fmt.Sprintf("%s outside pool %s", nodes, r.Pool)
	case RejectPlacement:
		return fmt.Sprintf("%s outside the project's placement policy (%s)", nodes, r.Policy.describe())
	case RejectWholeGPUs:
		return fmt.Sprintf("%s %s GPUs only whole (Slurm nodes), not a share or a MIG slice", nodes, verb("gives", "give"))
	case RejectSelector:
		return fmt.Sprintf("%s without the labels %s", nodes, labels(r.NodeSelector))
	case RejectSpot:
		return fmt.Sprintf("%s %s and the job does not allow spot", nodes, verb("is a spot node", "are spot nodes"))
	case RejectCPU:
		return fmt.Sprintf("%s %s %s free CPU cores", nodes, verb("lacks", "lack"), cores(r.CPUMilli))
	case RejectRAM:
		return fmt.Sprintf("%s %s %s free RAM", nodes, verb("lacks", "lack"), mib(r.RAMMiB))
	case RejectScratch:
		return fmt.Sprintf("%s %s %s free scratch disk", nodes, verb("lacks", "lack"), mib(r.ScratchMiB))
	case RejectGPUModel:
		return fmt.Sprintf("%s %s no %s", nodes, verb("has", "have"), s.d.card())
	case RejectGPUCount:
		return fmt.Sprintf("%s %s fewer than %d %s", nodes, verb("has", "have"), s.d.cards, s.d.gpus(s.d.cards))
	case RejectGPUsBusy:
		if s.d.milli < 1000 {
			return fmt.Sprintf("%s %s no %s with %s of it free", nodes, verb("has", "have"), s.d.card(), share(int64(s.d.milli)))
		}
		return fmt.Sprintf("%s %s fewer than %d free %s", nodes, verb("has", "have"), s.d.cards, s.d.gpus(s.d.cards))
	case RejectNVLink:
		return fmt.Sprintf("%s %s no %d %s joined by NVLink each to every other", nodes, verb("has", "have"), s.d.cards, s.d.gpus(s.d.cards))
	case RejectMIG:
		return fmt.Sprintf("%s %s no MIG %s slice", nodes, verb("offers", "offer"), s.d.mig)
	case RejectMIGBusy:
		return fmt.Sprintf("%s %s no free MIG %s slice", nodes, verb("has", "have"), s.d.mig)
	case RejectQuota:
		return fmt.Sprintf("%s refused by quota (%s)", nodes, s.quotaWhy)
	case RejectReserved:
		return fmt.Sprintf("%s held for the blocked head of the queue", nodes)
	}
	return fmt.Sprintf("%s: %s", nodes, reason)
}

// describe summarises what one replica asks for.
func (d *demand) describe() string {
	var parts []string
	switch {
	case d.mig != "":
		parts = append(parts, "a MIG "+d.mig+" slice")
	case d.cards > 0 && d.milli < 1000:
		parts = append(parts, fmt.Sprintf("%s of a %s", share(int64(d.milli)), d.card()))
	case d.cards > 0 && d.req.NVLink:
		parts = append(parts, fmt.Sprintf("%d × %s joined by NVLink", d.cards, d.card()))
	case d.cards > 0:
		parts = append(parts, fmt.Sprintf("%d × %s", d.cards, d.card()))
	}
	if d.req.CPUMilli > 0 {
		parts = append(parts, cores(d.req.CPUMilli)+" CPU cores")
	}
	if d.req.RAMMiB > 0 {
		parts = append(parts, mib(d.req.RAMMiB)+" RAM")
	}
	if d.req.ScratchMiB > 0 {
		parts = append(parts, mib(d.req.ScratchMiB)+" scratch")
	}
	if len(parts) == 0 {
		return "the job"
	}
	return strings.Join(parts, ", ")
}

// card describes the GPU the request accepts, e.g. "A100|H100 GPU with ≥ 40 GiB".
func (d *demand) card() string { return d.gpus(1) }

// gpus is card for n of them: "2 free A100 GPUs", not "2 free A100 GPU".
func (d *demand) gpus(n int) string {
	s := "GPU"
	if n != 1 {
		s = "GPUs"
	}
	if len(d.req.GPUModels) > 0 {
		s = strings.Join(d.req.GPUModels, "|") + " " + s
	}
	if d.req.GPUMemoryMiB > 0 && d.milli == 1000 {
		s += " with ≥ " + mib(d.req.GPUMemoryMiB)
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// cores formats milli-cores as cores: 16000 -> "16", 2500 -> "2.5".
func cores(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) }

// share writes a share of one GPU as the submit form takes it: 250 milli-GPU is "0.25".
func share(milli int64) string { return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64) }

// mib formats MiB, in GiB from 1 GiB up.
func mib(v int64) string {
	if v >= 1024 {
		return strconv.FormatFloat(float64(v)/1024, 'f', -1, 64) + " GiB"
	}
	return strconv.FormatInt(v, 10) + " MiB"
}

func labels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}

// describe says what a placement policy allows, for explanations.
func (p Policy) describe() string {
	var parts []string
	if len(p.Pools) > 0 {
		parts = append(parts, "pools "+strings.Join(p.Pools, ", "))
	}
	if len(p.Regions) > 0 {
		parts = append(parts, "regions "+strings.Join(p.Regions, ", "))
	}
	if p.ConfidentialOnly {
		parts = append(parts, "confidential computing only")
	}
	return strings.Join(parts, "; ")
}
