package accounting_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// t0 is the start of every test history: a Monday, midnight UTC.
var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func at(h, m int) time.Time { return t0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }

// world is a small organisation with a fleet, built on a real store.
type world struct {
	t        *testing.T
	ctx      context.Context
	s        *store.Store
	acc      *accounting.Accounting
	users    map[string]*models.User
	teams    map[string]*models.Team
	projects map[string]*models.Project
	pools    map[string]*models.NodePool
	nodes    map[string]*models.Node
	images   map[string]*models.Image
}

// newWorld creates teams vision (project detect, user ada) and audio (project speech,
// user bob); pools ondemand and spot; an image matlab; accounting with hourly metering.
func newWorld(t *testing.T, s *store.Store) *world {
	t.Helper()
	acc, err := accounting.New(s, audit.New(s, time.Now), accounting.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: context.Background(), s: s, acc: acc, users: map[string]*models.User{},
		teams: map[string]*models.Team{}, projects: map[string]*models.Project{}, pools: map[string]*models.NodePool{},
		nodes: map[string]*models.Node{}, images: map[string]*models.Image{}}
	for _, o := range []struct{ user, team, project string }{{"ada", "vision", "detect"}, {"bob", "audio", "speech"}} {
		u := &models.User{Username: o.user}
		must(t, s.CreateUser(w.ctx, u))
		tm := &models.Team{Name: o.team}
		must(t, s.CreateTeam(w.ctx, tm))
		p := &models.Project{TeamID: tm.ID, Name: o.project}
		must(t, s.CreateProject(w.ctx, p))
		w.users[o.user], w.teams[o.team], w.projects[o.project] = u, tm, p
	}
	for name, capacity := range map[string]string{"ondemand": models.CapacityOnDemand, "spot": models.CapacitySpot} {
		p := &models.NodePool{Name: name, Provider: "static", CapacityType: capacity}
		must(t, s.CreateNodePool(w.ctx, p))
		w.pools[name] = p
	}
	img := &models.Image{Name: "matlab", Reference: "registry.example/matlab:r2026a", Status: models.ImageCertified}
	must(t, s.CreateImage(w.ctx, img))
	w.images["matlab"] = img
	return w
}

// node registers a node at t0 in pool with GPUs of model named uuid prefix-0, prefix-1, …
func (w *world) node(name, pool, model string, gpus int, migSlices map[int][]models.GPUSlice) *models.Node {
	w.t.Helper()
	n := &models.Node{Name: name, State: models.NodeReady, CreatedAt: t0, UpdatedAt: t0}
	if pool != "" {
		n.PoolID = &w.pools[pool].ID
	}
	must(w.t, w.s.CreateNode(w.ctx, n, nil))
	var devs []store.NodeDevice
	for i := range gpus {
		d := store.NodeDevice{GPUDevice: models.GPUDevice{Index: i, UUID: name + "-" + string(rune('0'+i)), Model: model,
			MemoryMiB: 81920, Healthy: true, MIGEnabled: len(migSlices[i]) > 0}}
		d.Slices = migSlices[i]
		devs = append(devs, d)
	}
	must(w.t, w.s.ReplaceNodeDevices(w.ctx, n.ID, devs))
	w.nodes[name] = n
	return n
}

func (w *world) rate(r models.CostRate) *models.CostRate {
	w.t.Helper()
	got, err := w.acc.CreateRate(w.ctx, r)
	if err != nil {
		w.t.Fatalf("create rate %+v: %v", r, err)
	}
	return got
}

// job submits a job of user in project.
func (w *world) job(name, user, project, image string) *models.Job {
	w.t.Helper()
	j := &models.Job{Name: name, ProjectID: w.projects[project].ID, UserID: w.users[user].ID, Command: `["true"]`,
		PriorityClass: "research", SubmittedAt: t0}
	if image != "" {
		j.ImageID = &w.images[image].ID
	}
	must(w.t, w.s.CreateJob(w.ctx, j, "test"))
	return j
}

// alloc records that replica 0 of j's attempt 1 ran on node with devices from start
// to end (nil: still running).
func (w *world) alloc(j *models.Job, node, devices string, cpuMilli, memMiB, scratchMiB int64, start time.Time, end *time.Time) *models.Allocation {
	w.t.Helper()
	state := models.AllocRunning
	if end != nil {
		state = models.AllocEnded
	}
	a := []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: w.nodes[node].ID, Devices: devices, CPUMilli: cpuMilli,
		MemoryMiB: memMiB, ScratchMiB: scratchMiB, State: state, StartedAt: &start, EndedAt: end}}
	must(w.t, w.s.CreateAllocations(w.ctx, a))
	return &a[0]
}

func (w *world) meter(until time.Time) accounting.MeterReport {
	w.t.Helper()
	rep, err := w.acc.Meter(w.ctx, until)
	if err != nil {
		w.t.Fatalf("meter until %s: %v", until, err)
	}
	return rep
}

// jobCost sums the ledger entries of job j by resource; the daily ledger must agree.
func (w *world) jobCost(j *models.Job) map[string]int64 {
	w.t.Helper()
	q := store.RollupQuery{By: store.ByResource, From: t0.AddDate(0, -1, 0), To: t0.AddDate(0, 1, 0), JobIDs: []int64{j.ID}}
	return w.sums(q)
}

// sums runs q on the entries and on the daily ledger, fails when they differ, and returns
// the amounts by key (the name for text dimensions).
func (w *world) sums(q store.RollupQuery) map[string]int64 {
	w.t.Helper()
	fromEntries, err := w.s.CostRollupFromEntries(w.ctx, q)
	if err != nil {
		w.t.Fatal(err)
	}
	daily, err := w.s.CostRollup(w.ctx, q)
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int64{}
	for _, r := range fromEntries {
		out[rowKey(r)] += r.AmountMicros
	}
	again := map[string]int64{}
	for _, r := range daily {
		again[rowKey(r)] += r.AmountMicros
	}
	if fmt.Sprint(out) != fmt.Sprint(again) {
		w.t.Errorf("roll-up %+v: entries say %v, daily ledger says %v", q, out, again)
	}
	return out
}

func rowKey(r store.RollupRow) string {
	k := r.Name
	if k == "" {
		k = fmt.Sprint(r.Key)
	}
	if !r.Bucket.IsZero() {
		k += "@" + r.Bucket.Format(time.DateOnly)
	}
	return k
}

// fresh opens another empty store on the database kind of s, for subtests that each
// need their own history.
func fresh(t *testing.T, s *store.Store) *store.Store {
	t.Helper()
	for _, b := range storetest.Backends() {
		if b.Name == s.Dialect() {
			return storetest.Open(t, b.Config(t))
		}
	}
	t.Fatalf("no test backend for %s", s.Dialect())
	return nil
}

// audited lists the audit events whose action starts with prefix, as action:actor, oldest first.
func (w *world) audited(prefix string) string {
	w.t.Helper()
	events, err := w.s.AuditEventsAfter(w.ctx, store.AuditFilter{}, 0, 1000)
	must(w.t, err)
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e.Action, prefix) {
			out = append(out, e.Action+":"+e.Actor)
		}
	}
	return strings.Join(out, " ")
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tp(t time.Time) *time.Time { return &t }
