package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/pools"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
	"github.com/gantry-gpu/gantry/web/browsertest"
)

// The pool page in a real browser: the chart draws its three lines, and "older
// decisions" swaps the next page of decisions in place through htmx.
func TestPoolPageInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	p, _, err := pools.Apply(audit.WithActor(t.Context(), audit.System()), st, audit.New(st, time.Now), pools.Spec{Name: "a100-spot", Provider: pools.ProviderExec,
		CapacityType: models.CapacitySpot, MaxNodes: 8, Template: pools.Template{GPUModel: "A100-80GB", GPUs: 8, CPUMilli: 96000, MemoryMiB: 1 << 20},
		ProviderConfig: map[string]any{"command": []any{"/etc/gantry/pool.sh"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var samples []models.PoolSample
	for i := range 30 {
		samples = append(samples, models.PoolSample{PoolID: p.ID, At: now.Add(time.Duration(i-30) * 10 * time.Minute), Nodes: i % 5, Booting: i % 2, PendingJobs: (30 - i) % 7})
	}
	if err := st.CreatePoolSamples(t.Context(), samples); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		e := models.PoolEvent{PoolID: &p.ID, At: now.Add(time.Duration(i-60) * time.Minute), Kind: models.PoolScaleDown, Nodes: 1,
			Reason: fmt.Sprintf("node a100-spot-%02d had no work for 10m", i)}
		if err := st.CreatePoolEvent(t.Context(), &e); err != nil {
			t.Fatal(err)
		}
	}
	err = chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin/pools"),
		chromedp.WaitVisible(`[data-pool="a100-spot"]`),
		browsertest.Loads(chromedp.Click(`[data-pool="a100-spot"] a`)),
		chromedp.WaitVisible(`[data-testid="pool-chart"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="pool-chart"] polyline').length`)); n != 3 {
		t.Fatalf("%d chart lines, want 3", n)
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="pool-events"] tbody tr').length`)); n != 50 {
		t.Fatalf("%d decisions on the first page, want 50", n)
	}
	browsertest.Screenshot(t, ctx, "pool")
	err = chromedp.Do(ctx,
		chromedp.Click(`#pool-events a[hx-get]`),
		chromedp.WaitVisible(`[data-testid="pool-events"] tbody tr:nth-child(10)`),
	)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="pool-events"] tbody tr').length`))
		text := run(t, ctx, chromedp.Evaluate[string](`document.querySelector('#pool-events').innerText`))
		if rows == 10 && strings.Contains(text, "a100-spot-00") && strings.Count(run(t, ctx, chromedp.Evaluate[string](`document.body.innerHTML`)), `id="pool-chart-title"`) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after older decisions: %d rows; %q", rows, text[:min(len(text), 200)])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// An admin forgets, from the pool's page and after confirming, the jobs of a Slurm
// pool's old cluster: the page says what happened, the job failed as lost, audited.
func TestForgetSlurmJobsInBrowser(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newJobSite(t, st).site
	ctx := browsertest.New(t)
	signInBrowser(t, ctx, s)
	j := movedSlurmPool(t, s)
	err := chromedp.Do(ctx,
		browsertest.Navigate(s.srv.URL+"/admin/pools/hpc"),
		chromedp.WaitVisible(`[data-testid="slurm-moved"]`),
		browsertest.Loads(chromedp.Click(`[data-testid="forget-slurm-jobs"]`)),
		chromedp.WaitVisible(`//button[normalize-space()="Forget the jobs"]`),
		browsertest.Loads(chromedp.Click(`//button[normalize-space()="Forget the jobs"]`)),
		chromedp.WaitVisible(`[data-testid="pool-facts"]`),
	)
	if err != nil {
		t.Fatal(err)
	}
	text := run(t, ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if !strings.Contains(text, "Forgot 1 Slurm job of the old cluster: their Gantry jobs failed as lost") || strings.Contains(text, "Stopped: another cluster") {
		t.Errorf("the pool page after forgetting: %q", text[:min(len(text), 600)])
	}
	got, err := st.JobByID(t.Context(), j.ID)
	if err != nil || got.State != models.JobFailed {
		t.Fatalf("the forgotten job: %+v, %v", got, err)
	}
	err = chromedp.Do(ctx, browsertest.Navigate(fmt.Sprintf("%s/jobs/%d", s.srv.URL, j.ID)), chromedp.WaitVisible(`h1`))
	if err != nil {
		t.Fatal(err)
	}
	if text := run(t, ctx, chromedp.Evaluate[string](`document.body.innerText`)); !strings.Contains(text,
		"Slurm job 12 on cluster gantry, which pool hpc no longer reaches, forgotten by user:admin") {
		t.Errorf("the job page does not say why it failed: %q", text[:min(len(text), 1500)])
	}
	evs, err := st.AuditEventsAfter(t.Context(), store.AuditFilter{}, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, e := range evs {
		audited = audited || e.Action == "pool.slurm_jobs_forgotten" && e.ObjectID == "hpc" && e.Actor == "admin"
	}
	if !audited {
		t.Errorf("no pool.slurm_jobs_forgotten entry by the admin: %+v", evs)
	}
}
