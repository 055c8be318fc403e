package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/slurm"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/templates"
)

// poolWindows are the chart's time windows.
var poolWindows = map[string]time.Duration{"24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// poolEventsPage is how many decisions one page shows.
const poolEventsPage = 50

// PoolShow is one pool: its facts, a chart of nodes and waiting jobs, its nodes
// (removed ones only with ?removed=1) and machines, and its decisions with their
// reasons. The "older decisions" link asks htmx for the same page and swaps in its
// decisions.
func (h *Handler) PoolShow(c *gin.Context) {
	window := c.DefaultQuery("window", "24h")
	span, ok := poolWindows[window]
	if !ok {
		h.errorPage(c, http.StatusBadRequest, "Unknown time window", fmt.Sprintf("Window: %q is not one of 24h, 7d, 30d.", window))
		return
	}
	showRemoved, ok := h.removedOnPage(c)
	if !ok {
		return
	}
	var before int64
	if raw := c.Query("before"); raw != "" {
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v <= 0 {
			h.errorPage(c, http.StatusBadRequest, "Bad page", fmt.Sprintf("Before: %q is not an event id; follow the page's own links.", raw))
			return
		}
		before = v
	}
	name := c.Param("name")
	now := time.Now().UTC()
	d, err := pools.DetailOf(c.Request.Context(), h.store, name, now, now.Add(-span), now.Add(time.Second), before, poolEventsPage)
	if errors.Is(err, store.ErrNotFound) {
		h.missingPage(c, "No such pool", fmt.Sprintf("There is no pool %q.", name), poolsLink)
		return
	}
	if err != nil {
		h.serverError(c, err)
		return
	}
	cur, err := h.cost.Currency(c.Request.Context())
	if err != nil {
		h.serverError(c, err)
		return
	}
	page := templates.PoolData{Pool: poolRow(d.Summary, cur), DrainStops: d.Pool.DrainStopsJobs, Window: window, Windows: []string{"24h", "7d", "30d"},
		IdleTimeout: "the server's --pool-idle-timeout", ShowRemoved: showRemoved, Notice: c.Query("notice")}
	if d.Pool.IdleTimeoutSec > 0 {
		page.IdleTimeout = (time.Duration(d.Pool.IdleTimeoutSec) * time.Second).String()
	}
	labels, err := json.Marshal(pools.NodeLabels(d.Pool, d.Template))
	if err != nil {
		h.serverError(c, err)
		return
	}
	page.Labels = string(labels)
	points := make([]templates.PoolPoint, 0, len(d.Samples))
	for _, s := range d.Samples {
		points = append(points, templates.PoolPoint{At: s.At, Nodes: s.Nodes, Booting: s.Booting, Demand: s.PendingJobs})
		page.Samples = append(page.Samples, templates.PoolSampleRow{At: stamp(s.At), Nodes: s.Nodes, Booting: s.Booting, Pending: s.PendingJobs})
	}
	slices.Reverse(page.Samples)
	page.Chart = templates.NewPoolChart(points)
	for _, n := range d.Nodes {
		if n.RemovedAt != nil {
			page.RemovedNodes++
			if !showRemoved {
				continue
			}
		}
		seen := "never"
		if n.LastHeartbeatAt != nil {
			seen = stamp(*n.LastHeartbeatAt)
		}
		page.Nodes = append(page.Nodes, templates.PoolNodeRow{Name: n.Name, State: n.State, Reason: n.StateReason, LastSeen: seen, Removed: removedDate(n)})
	}
	for _, m := range d.Instances {
		page.Machines = append(page.Machines, templates.PoolMachineRow{Name: m.Name, State: m.State, Reason: m.StateReason,
			ProviderID: m.ProviderID, RequestedAt: stamp(m.RequestedAt)})
	}
	for _, e := range d.Events {
		page.Events = append(page.Events, templates.PoolEventRow{At: stamp(e.At), Kind: e.Kind, Reason: e.Reason, Nodes: e.Nodes})
	}
	if d.MoreEvents != 0 {
		page.OlderEvents = "/admin/pools/" + url.PathEscape(name) + "?" + url.Values{"window": {window}, "before": {strconv.FormatInt(d.MoreEvents, 10)}}.Encode()
	}
	if d.Pool.Provider == pools.ProviderSlurm {
		if page.Slurm, err = h.poolSlurm(c, d.Pool); err != nil {
			h.serverError(c, err)
			return
		}
	}
	render(c, http.StatusOK, templates.Pool(h.page(c, "Pool "+name, "admin"), page))
}

// poolSlurm is a Slurm pool's partition, the jobs there that Gantry did not submit,
// and whether it stands still on a slurm.conf that leads to another cluster.
func (h *Handler) poolSlurm(c *gin.Context, p models.NodePool) (*templates.PoolSlurm, error) {
	cfg, _ := slurm.ParseConfig(p.ProviderConfig)
	jobs, err := h.store.SlurmForeignJobs(c.Request.Context(), p.ID)
	if err != nil {
		return nil, err
	}
	out := &templates.PoolSlurm{Partition: cfg.Partition}
	move, err := h.store.SlurmClusterMove(c.Request.Context(), p.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if move != nil {
		rows, err := h.store.OpenSlurmJobs(c.Request.Context(), p.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if !r.Done {
				out.OpenJobs++
			}
		}
		if out.OpenJobs > 0 { // with none left, the pool takes the new cluster at its next pass
			out.Moved, out.Cluster, out.LastSeen, out.CanForget = move.Reason, move.JobsCluster, stamp(move.LastSeenAt), canAdmin(c)
		}
	}
	for _, j := range jobs {
		row := templates.PoolForeignRow{ID: j.SlurmJobID, Name: j.Name, User: j.User, Account: j.Account, QOS: j.QOS, State: j.State,
			Reason: j.Reason, GPUs: "none", Nodes: "none yet", Since: "waiting since " + stamp(j.SubmittedAt)}
		if j.GPUs > 0 {
			row.GPUs = fmt.Sprintf("%d× %s per node", j.GPUs, orAny(j.GPUModel))
		}
		var nodes []string
		if json.Unmarshal([]byte(j.Nodes), &nodes) == nil && len(nodes) > 0 {
			row.Nodes = strings.Join(nodes, ", ")
		}
		if j.StartedAt != nil {
			row.Since = "running since " + stamp(*j.StartedAt)
		}
		out.Foreign = append(out.Foreign, row)
	}
	return out, nil
}

func orAny(model string) string {
	if model == "" {
		return "GPU"
	}
	return model
}

// poolRow is a pool's summary in words, its price in currency.
func poolRow(s pools.Summary, currency string) templates.PoolRow {
	p, t := s.Pool, s.Template
	r := templates.PoolRow{Name: p.Name, Provider: p.Provider, Capacity: p.CapacityType, Region: p.Region, Zone: p.Zone, SpotOnly: p.SpotOnly,
		Min: p.MinNodes, Max: p.MaxNodes, InService: s.InService, Booting: s.Booting, Retiring: s.Retiring,
		Template: fmt.Sprintf("%d CPU, %d GiB RAM", t.CPUMilli/1000, t.MemoryMiB/1024)}
	if t.GPUs > 0 {
		r.Template = fmt.Sprintf("%d× %s, ", t.GPUs, t.GPUModel) + r.Template
	}
	if t.Runtime != "" {
		r.Template += ", runtime " + t.Runtime
	}
	if p.Provider == pools.ProviderSlurm {
		r.Template = "none: its nodes are its Slurm partition's"
	}
	switch {
	case s.PriceMicros > 0:
		r.Price = accounting.FormatAmount(s.PriceMicros, currency) + " a node-hour"
	case p.CapacityType == models.CapacityOwned:
		r.Price = "owned: no rate"
	default:
		r.Price = "no rate on the rate card"
	}
	if e := s.LastEvent; e != nil {
		r.LastEvent, r.LastEventAt, r.LastEventKind = e.Reason, stamp(e.At), e.Kind
	}
	return r
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }
