package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// serve keeps GPU history as its retention flags say: with raw samples kept 20 minutes
// and roll-ups 2 days, its first maintenance pass rolls up the raw samples, then
// deletes those older than 20 minutes and keeps the recent one, and deletes roll-ups
// older than 2 days.
func TestServeEnforcesTheTelemetryRetentionFlags(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ctx := context.Background()
			n := &models.Node{Name: "gpu-1", State: models.NodeReady, Labels: "{}", Runtime: "process"}
			if err := st.CreateNode(ctx, n, nil); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Minute)
			row := func(res string, at time.Time, util float64) models.TelemetrySample {
				return models.TelemetrySample{NodeID: n.ID, DeviceUUID: "GPU-a", At: at, Resolution: res, Samples: 1, Reported: models.ReportedUtil,
					UtilPct: util, UtilMinPct: util, UtilMaxPct: util}
			}
			old := now.Add(-3 * 24 * time.Hour)
			rows := []models.TelemetrySample{
				row(models.ResolutionRaw, now.Add(-40*time.Minute), 10), row(models.ResolutionRaw, now.Add(-30*time.Minute), 20),
				row(models.ResolutionRaw, now.Add(-5*time.Minute), 30),
				row(models.ResolutionMinute, old, 40), row(models.ResolutionHour, old.Truncate(time.Hour), 40),
			}
			if err := st.InsertTelemetry(ctx, rows); err != nil {
				t.Fatal(err)
			}
			_, stop := serve(t, nil, append([]string{"--data-dir", t.TempDir(), "--no-local-agent", "--bcrypt-cost", "4",
				"--telemetry-raw-retention", "20m", "--telemetry-rollup-retention", "2d"}, dbArgs(cfg)...)...)
			history := func(res string) []models.TelemetrySample {
				t.Helper()
				got, err := st.Telemetry(ctx, store.TelemetryFilter{DeviceUUID: "GPU-a", Resolution: res, From: old.Add(-time.Hour), To: now.Add(time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			// A pass prunes raw samples, then 1-minute and then 1-hour roll-ups: wait for
			// the last, not the first, before stopping serve.
			pruned := func() bool {
				for _, h := range history(models.ResolutionHour) {
					if h.At.Before(now.Add(-2 * 24 * time.Hour)) {
						return false
					}
				}
				return len(history(models.ResolutionRaw)) == 1
			}
			deadline := time.Now().Add(30 * time.Second)
			for !pruned() && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if code, log := stop(); code != 0 {
				t.Fatalf("serve exited %d: %s", code, log)
			}
			if raw := history(models.ResolutionRaw); len(raw) != 1 || !raw[0].At.Equal(now.Add(-5*time.Minute)) {
				t.Fatalf("raw samples left = %+v; want only the one of 5 minutes ago", raw)
			}
			minutes := history(models.ResolutionMinute)
			var rolled []float64
			for _, m := range minutes {
				if m.At.Before(now.Add(-2 * 24 * time.Hour)) {
					t.Errorf("a 1-minute roll-up of %s outlived the 2-day retention", m.At)
				}
				rolled = append(rolled, m.UtilPct)
			}
			if len(rolled) != 3 || rolled[0] != 10 || rolled[1] != 20 || rolled[2] != 30 {
				t.Errorf("1-minute roll-ups = %v; want each raw sample rolled up, the pruned ones too (10%%, 20%%, 30%%)", rolled)
			}
			for _, h := range history(models.ResolutionHour) {
				if h.At.Before(now.Add(-2 * 24 * time.Hour)) {
					t.Errorf("a 1-hour roll-up of %s outlived the 2-day retention", h.At)
				}
			}
		})
	}
}

// serve deletes, at its first pass, the output of the jobs that ended longer ago than
// --job-log-retention, and says so on their timelines; the output of a job that ended
// since is kept.
func TestServeEnforcesTheJobLogRetention(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ctx := context.Background()
			u := &models.User{Username: "ada"}
			if err := st.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
			team := &models.Team{Name: "vision"}
			if err := st.CreateTeam(ctx, team); err != nil {
				t.Fatal(err)
			}
			p := &models.Project{TeamID: team.ID, Name: "detect"}
			if err := st.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
			ended := func(name string) *models.Job {
				j := &models.Job{Name: name, ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, Env: "{}", PriorityClass: "research", Replicas: 1}
				if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
					t.Fatal(err)
				}
				if err := st.TransitionJob(ctx, j.ID, store.Transition{From: models.JobQueued, To: models.JobCancelled, Reason: "cancelled"}); err != nil {
					t.Fatal(err)
				}
				if err := st.CreateLogChunk(ctx, &models.JobLogChunk{JobID: j.ID, Stream: "stdout", Data: []byte("epoch 1\n")}); err != nil {
					t.Fatal(err)
				}
				return j
			}
			old, recent := ended("old"), ended("recent")
			twoDaysAgo := time.Now().UTC().Add(-48 * time.Hour).Format("2006-01-02 15:04:05.999999999-07:00")
			storetest.Exec(t, cfg, fmt.Sprintf("UPDATE jobs SET finished_at = '%s' WHERE id = %d", twoDaysAgo, old.ID))
			output := func(id int64) int {
				t.Helper()
				chunks, err := st.LogChunks(ctx, store.LogFilter{JobID: id})
				if err != nil {
					t.Fatal(err)
				}
				return len(chunks)
			}

			_, stop := serve(t, nil, append([]string{"--data-dir", t.TempDir(), "--no-local-agent", "--bcrypt-cost", "4", "--job-log-retention", "1d"}, dbArgs(cfg)...)...)
			deadline := time.Now().Add(30 * time.Second)
			for output(old.ID) > 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if code, log := stop(); code != 0 {
				t.Fatalf("serve exited %d: %s", code, log)
			}
			if output(old.ID) != 0 || output(recent.ID) != 1 {
				t.Fatalf("old job's output %d chunks, recent's %d; want 0 and 1", output(old.ID), output(recent.ID))
			}
			evs, err := st.JobEvents(ctx, old.ID)
			if err != nil {
				t.Fatal(err)
			}
			if last := evs[len(evs)-1]; last.Reason != dispatch.ReasonLogRetention || last.Message != "output deleted: a job's output is kept 1 day after it ends" {
				t.Errorf("old job's last event = %+v, want the deletion", last)
			}
		})
	}
}
