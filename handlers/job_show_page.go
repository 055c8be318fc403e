package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/templates"
)

// pageTime is how job pages write instants.
const pageTime = "2006-01-02 15:04:05 UTC"

// JobShowPage is a job's page: its state and timeline, where it runs, why it waits,
// what it cost so far, its live logs, and the actions the user may take. An htmx
// request is the page's live part refreshing itself: it gets that part alone, or 204
// when the version it shows (?shown) is still what the job looks like, which it learns
// without drawing the part; when the job's state changed since, the answer also
// triggers "job-state" (its value the new state) for the other parts of the page to follow.
func (h *Handler) JobShowPage(c *gin.Context) {
	j := h.jobPageParam(c)
	if j == nil {
		return
	}
	p := h.page(c, j.Name+" (job "+strconv.FormatInt(j.ID, 10)+")", "jobs")
	submitted := c.Query("submitted") == "1"
	version, err := h.liveVersion(c, p, j, submitted)
	if err != nil {
		h.serverError(c, err)
		return
	}
	// The live part and the page live at one URL: caches must keep them apart.
	c.Header("Vary", "HX-Request")
	live := c.GetHeader("HX-Request") == "true" && c.GetHeader("HX-History-Restore-Request") != "true"
	shown := c.Query("shown")
	if live && shown == version {
		c.Status(http.StatusNoContent)
		return
	}
	d, err := h.jobPageData(c, j)
	if err != nil {
		h.serverError(c, err)
		return
	}
	d.Submitted, d.Version = submitted, version
	if live {
		if state, _, _ := strings.Cut(shown, "."); state != "" && state != j.State {
			d.StateChanged = true
			c.Header("HX-Trigger", liveTrigger(j.State))
		}
		render(c, http.StatusOK, templates.JobLiveAnswer(p, d))
		return
	}
	d.Notice = c.Query("notice")
	if d.RerunOf, err = h.rerunOf(c, j); err != nil {
		h.serverError(c, err)
		return
	}
	render(c, http.StatusOK, templates.JobShow(p, d))
}

// rerunOf is the job that j re-ran, zero for a job submitted afresh. A re-run is of
// its own project's job, which whoever reads j may read.
func (h *Handler) rerunOf(c *gin.Context, j *models.Job) (templates.JobRef, error) {
	if j.RerunOf == nil {
		return templates.JobRef{}, nil
	}
	old, err := h.jobs.Job(c.Request.Context(), *j.RerunOf)
	if err != nil {
		return templates.JobRef{}, fmt.Errorf("the job %d re-ran: %w", *j.RerunOf, err)
	}
	return templates.JobRef{ID: old.ID, Name: old.Name}, nil
}

// liveVersion names what the live part of a job's page shows: the job's state, then a
// hash of what the part is drawn from, all of it cheap to read: the job's row (as the
// gate read it), its project's name and placement policy, the caller's permission and
// CSRF token (its forms carry it), whether the page was opened on submitting, and the
// job's activity (events, allocations, charges, metering). It is read before the part
// is drawn, so a change in between makes the next refresh draw it again. A running
// job's run time, which changes every second, is not in it: the page counts it on.
func (h *Handler) liveVersion(c *gin.Context, p templates.Page, j *models.Job, submitted bool) (string, error) {
	activity, err := h.jobs.Activity(c.Request.Context(), j.ID)
	if err != nil {
		return "", err
	}
	row := *j
	// updated_at moves with any change to the row, shown or not; the fields say what changed.
	row.UpdatedAt = time.Time{}
	b, err := json.Marshal(row)
	if err != nil {
		return "", fmt.Errorf("version of job %d: %w", j.ID, err)
	}
	sum := fnv.New64a()
	sum.Write(b)
	fmt.Fprintf(sum, "%q %t %t", p.CSRF, permission(c).CanWrite(authz.Jobs), submitted)
	if pr := routeProject(c); pr != nil {
		fmt.Fprintf(sum, " %q %q", pr.Name, placementText(pr))
	}
	sum.Write([]byte(activity))
	return j.State + "." + strconv.FormatUint(sum.Sum64(), 36), nil
}

// liveTrigger is the HX-Trigger header that tells a job's page its job is now in state.
func liveTrigger(state string) string {
	b, _ := json.Marshal(map[string]string{"job-state": state})
	return string(b)
}

func (h *Handler) jobPageData(c *gin.Context, j *models.Job) (templates.JobPageData, error) {
	ctx := c.Request.Context()
	now := time.Now().UTC()
	perm := permission(c)
	d := templates.JobPageData{CanWrite: perm.CanWrite(authz.Jobs), CanSubmit: perm.CanWrite(authz.Jobs)}
	names, err := h.store.UsernamesByID(ctx, []int64{j.UserID})
	if err != nil {
		return d, err
	}
	d.Job, err = h.jobSummary(ctx, j, names[j.UserID], now)
	if err != nil {
		return d, err
	}
	if p := routeProject(c); p != nil {
		d.Job.Project = p.Name
		d.Job.Placement = placementText(p)
	}
	events, err := h.jobs.Events(ctx, j.ID)
	if err != nil {
		return d, err
	}
	for _, e := range events {
		d.Events = append(d.Events, templates.JobEventRow{At: e.CreatedAt.UTC().Format(pageTime), From: e.FromState, To: e.ToState,
			Reason: e.Reason, Message: e.Message, Actor: e.Actor, Attempt: e.Attempt})
		switch e.Reason {
		case dispatch.ReasonLogLimit:
			d.LogNotices = append(d.LogNotices, fmt.Sprintf("Attempt %d: %s.", e.Attempt, e.Message))
		case dispatch.ReasonLogRetention:
			d.LogNotices = append(d.LogNotices, fmt.Sprintf("On %s, %s.", e.CreatedAt.UTC().Format(pageTime), e.Message))
			d.OutputDeleted = true
		}
	}
	if h.dispatch != nil && h.dispatch.LogRetention() > 0 && j.FinishedAt != nil && !d.OutputDeleted {
		d.OutputKeptUntil = j.FinishedAt.Add(h.dispatch.LogRetention()).UTC().Format("2006-01-02 15:04 UTC")
	}
	if j.State == models.JobFailed {
		d.Job.Failure = failure(j, events)
	}
	if d.Allocations, err = h.allocationRows(ctx, j.ID); err != nil {
		return d, err
	}
	if d.Cost, err = h.jobCost(ctx, j, now, canAdmin(c)); err != nil {
		return d, err
	}
	for n := 1; n <= j.Attempt; n++ {
		d.Attempts = append(d.Attempts, n)
	}
	return d, nil
}

// failure says why a failed job failed, as a sentence: the message of the event that
// failed it (what exited with which code, which limit it ran past), else the reason of
// its state.
func failure(j *models.Job, events []models.JobEvent) string {
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.ToState == models.JobFailed && e.Message != "" {
			return Sentence(e.Message)
		}
	}
	return Sentence(j.StateReason)
}

// jobSummary words the job for its page.
func (h *Handler) jobSummary(ctx context.Context, j *models.Job, user string, now time.Time) (templates.JobSummary, error) {
	s := templates.JobSummary{ID: j.ID, Name: j.Name, User: user, State: j.State, StateReason: j.StateReason, PendingReason: j.PendingReason,
		Image: j.ImageRef, PriorityClass: j.PriorityClass, Attempt: j.Attempt, Terminal: models.IsTerminal(j.State),
		Retries: fmt.Sprintf("%d of %d", j.Retries, j.MaxRetries), Submitted: j.SubmittedAt.UTC().Format(pageTime),
		Resources: describeResources(j)}
	if j.ImageID != nil {
		img, err := h.store.ImageByID(ctx, *j.ImageID)
		if err != nil {
			return s, err
		}
		s.Image = img.Name
		if img.Reference != "" {
			s.Image += " (" + img.Reference + ")"
		}
	}
	var args []string
	if err := json.Unmarshal([]byte(j.Command), &args); err == nil {
		s.Command = jobs.JoinCommand(args)
	}
	var env map[string]string
	var names []string
	if j.Env != "" && json.Unmarshal([]byte(j.Env), &env) == nil {
		// Values may be secrets: the page names the variables only.
		names = slices.Sorted(maps.Keys(env))
	}
	secret, err := h.jobs.SecretEnvNames(ctx, j.ID)
	if err != nil {
		return s, err
	}
	for _, k := range secret {
		names = append(names, k+" (secret)")
	}
	s.EnvNames = strings.Join(names, ", ")
	policy := []string{map[bool]string{true: "preemptible", false: "not preemptible"}[j.Preemptible]}
	if j.Spot {
		policy = append(policy, "spot allowed")
	}
	if j.ExpectedRunSec > 0 {
		policy = append(policy, "expected to run "+shortDuration(time.Duration(j.ExpectedRunSec)*time.Second))
	}
	s.Policy = strings.Join(policy, ", ")
	if j.ExitCode != nil {
		s.Exit = exitWords("exit code", *j.ExitCode, j.State == models.JobCancelled)
	}
	if j.StartedAt != nil {
		s.Started = j.StartedAt.UTC().Format(pageTime)
		end := now
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		ran := end.Sub(*j.StartedAt).Round(time.Second)
		s.Ran, s.RanSeconds, s.Counting = shortDuration(ran), int64(ran/time.Second), j.FinishedAt == nil
	}
	if j.FinishedAt != nil {
		s.Finished = j.FinishedAt.UTC().Format(pageTime)
	}
	return s, nil
}

// describeResources says what one replica asks for, e.g. "1 × A100-80GB GPU, 8 CPU cores, 32 GiB RAM".
func describeResources(j *models.Job) string {
	var parts []string
	model := "GPU"
	if j.GPUModel != "" {
		model = j.GPUModel + " GPU"
	}
	switch {
	case j.MIGProfile != "":
		parts = append(parts, "a MIG "+j.MIGProfile+" slice")
	case j.GPUMilli > 0:
		parts = append(parts, fmt.Sprintf("%s of a %s", decimal(float64(j.GPUMilli)/1000), model))
	case j.GPUs > 0 && j.NVLink:
		parts = append(parts, fmt.Sprintf("%d × %s joined by NVLink", j.GPUs, model))
	case j.GPUs > 0:
		parts = append(parts, fmt.Sprintf("%d × %s", j.GPUs, model))
	default:
		parts = append(parts, "no GPU")
	}
	if j.GPUMemoryMiB > 0 {
		parts = append(parts, gib(j.GPUMemoryMiB)+" GiB GPU memory")
	}
	if j.CPUMilli > 0 {
		parts = append(parts, decimal(float64(j.CPUMilli)/1000)+" CPU cores")
	}
	if j.MemoryMiB > 0 {
		parts = append(parts, gib(j.MemoryMiB)+" GiB RAM")
	}
	if j.ScratchMiB > 0 {
		parts = append(parts, gib(j.ScratchMiB)+" GiB scratch")
	}
	s := strings.Join(parts, ", ")
	if j.Replicas > 1 {
		s = fmt.Sprintf("%d replicas, each %s", j.Replicas, s)
	}
	return s
}

// allocationRows words where each replica of each attempt ran, naming each GPU by its
// index and model; simulated nodes say so.
func (h *Handler) allocationRows(ctx context.Context, jobID int64) ([]templates.AllocationRow, error) {
	allocs, err := h.jobs.Allocations(ctx, jobID)
	if err != nil {
		return nil, err
	}
	nodes := map[int64]*models.Node{}
	gpus := map[string]models.GPUDevice{}
	var out []templates.AllocationRow
	for _, a := range allocs {
		n, ok := nodes[a.NodeID]
		if !ok {
			if n, err = h.store.NodeByID(ctx, a.NodeID); err != nil {
				return nil, err
			}
			nodes[a.NodeID] = n
			devs, err := h.store.DevicesOfNode(ctx, a.NodeID)
			if err != nil {
				return nil, err
			}
			for _, d := range devs {
				gpus[d.UUID] = d
			}
		}
		row := templates.AllocationRow{Attempt: a.Attempt, Replica: a.Replica, Node: n.Name, Simulated: n.Simulated, State: a.State, StopReason: a.StopReason}
		devs, err := agentapi.ParseDevices(a.Devices)
		if err != nil {
			return nil, fmt.Errorf("devices of allocation %d: %w", a.ID, err)
		}
		for _, dv := range devs {
			g := gpus[dv.UUID]
			card := fmt.Sprintf("GPU %d · %s", g.Index, g.Model)
			switch {
			case dv.MIGProfile != "":
				card = "MIG " + dv.MIGProfile + " of " + card
			case dv.Milli < 1000:
				card += " · " + decimal(float64(dv.Milli)/1000) + " of it"
			}
			row.GPUs = append(row.GPUs, card)
		}
		if a.ExitCode != nil {
			row.Exit = exitWords("exit", *a.ExitCode, a.StopReason != "")
		}
		if a.StartedAt != nil {
			row.Started = a.StartedAt.UTC().Format(pageTime)
		}
		if a.EndedAt != nil {
			row.Ended = a.EndedAt.UTC().Format(pageTime)
		}
		out = append(out, row)
	}
	return out, nil
}

// jobCost is what the ledger charged the job so far. Nothing charged may be owed to no
// rates being set at all: they are read only then. canSetRates: the user may set them.
func (h *Handler) jobCost(ctx context.Context, j *models.Job, now time.Time, canSetRates bool) (templates.JobCostView, error) {
	rows, until, err := h.cost.JobCost(ctx, j, now)
	if err != nil {
		return templates.JobCostView{}, err
	}
	cur, err := h.cost.Currency(ctx)
	if err != nil {
		return templates.JobCostView{}, err
	}
	var v templates.JobCostView
	var total int64
	for _, r := range rows {
		total += r.AmountMicros
		v.Lines = append(v.Lines, templates.CostLine{Label: r.Label, Amount: accounting.FormatAmount(r.AmountMicros, cur)})
	}
	v.Total = accounting.FormatAmount(total, cur)
	if total == 0 {
		none, err := h.noRates(ctx)
		if err != nil {
			return templates.JobCostView{}, err
		}
		v.NoRates, v.CanSetRates = none, canSetRates
	}
	if !until.IsZero() {
		v.MeteredUntil = until.UTC().Format(pageTime)
	}
	return v, nil
}
