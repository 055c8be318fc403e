package quotas_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/quotas"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func milli(n int64) *int64 { return &n }

func field(t *testing.T, err error) string {
	t.Helper()
	var fe *models.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a field error, got %v", err)
	}
	return fe.Field
}

// world has teams vision and speech, and vision running three A100s with 24 cores and
// 96 GiB.
func world(t *testing.T, st *store.Store) *quotas.Service {
	t.Helper()
	ctx := context.Background()
	u := &models.User{Username: "ada"}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	var vision *models.Project
	for _, name := range []string{"vision", "speech"} {
		team := &models.Team{Name: name}
		if err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
		p := &models.Project{TeamID: team.ID, Name: name + "-main"}
		if err := st.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		if vision == nil {
			vision = p
		}
	}
	n := &models.Node{Name: "gpu-1", State: models.NodeReady, Labels: "{}", CPUMilli: 32000, MemoryMiB: 256000}
	var devs []models.GPUDevice
	for i, uuid := range []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"} {
		devs = append(devs, models.GPUDevice{Index: i, UUID: uuid, Model: "A100", MemoryMiB: 81920, Healthy: true, NVLinkPeers: "[]"})
	}
	if err := st.CreateNode(ctx, n, devs); err != nil {
		t.Fatal(err)
	}
	j := &models.Job{Name: "train", ProjectID: vision.ID, UserID: u.ID, Command: `["true"]`, Env: "{}", Replicas: 1, Kind: "training", PriorityClass: "research", GPUs: 3}
	if err := st.CreateJob(ctx, j, "test"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := st.CreateAllocations(ctx, []models.Allocation{{JobID: j.ID, Attempt: 1, NodeID: n.ID, GPUMilli: 3000, CPUMilli: 24000, MemoryMiB: 96 << 10, State: models.AllocRunning, StartedAt: &now,
		Devices: `[{"uuid":"GPU-a","milli":1000},{"uuid":"GPU-b","milli":1000},{"uuid":"GPU-c","milli":1000}]`}}); err != nil {
		t.Fatal(err)
	}
	return quotas.New(st, audit.New(st, time.Now), st)
}

func TestQuotaInputIsChecked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		svc := world(t, st)
		for _, c := range []struct {
			in    quotas.Input
			field string
		}{
			{quotas.Input{Team: "ghosts", QuotaLimits: models.QuotaLimits{NominalMilli: 1000}}, "team"},
			{quotas.Input{Team: "vision", GPUModel: "A100 80GB"}, "gpu_model"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{NominalMilli: -1}}, "guaranteed"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{NominalMilli: 1000, LendingLimitMilli: milli(2000)}}, "lending_limit"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{NominalMilli: 1000, BorrowingLimitMilli: milli(1000)}}, "borrowing_limit"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{Cohort: "Research!", NominalMilli: 1000}}, "cohort"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{CPUMilli: -1}}, "cpu"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{MemoryMiB: -1}}, "memory"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{CPUMilli: 8000, CPUBorrowingLimitMilli: milli(-1)}}, "cpu_borrowing_limit"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{CPUMilli: 8000, CPUBorrowingLimitMilli: milli(1000)}}, "cpu_borrowing_limit"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{CPUMilli: 8000, CPULendingLimitMilli: milli(9000)}}, "cpu_lending_limit"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{Cohort: "lab", CPUBorrowingLimitMilli: milli(1000)}}, "cpu"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{MemoryMiB: 1024, MemoryLendingLimitMiB: milli(2048)}}, "memory_lending_limit"},
			{quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{MemoryMiB: 1024, MemoryBorrowingLimitMiB: milli(2 << 40)}}, "memory_borrowing_limit"},
		} {
			if _, err := svc.Save(ctx, c.in); field(t, err) != c.field {
				t.Errorf("%+v: %v, want a field error on %s", c.in, err, c.field)
			}
		}
		if qs, _ := st.Quotas(ctx); len(qs) != 0 {
			t.Fatalf("refused input saved %+v", qs)
		}
		for _, c := range []struct {
			in   string
			want int64
		}{{"4", 4000}, {"0.5", 500}, {"2.125", 2125}, {" 1 ", 1000}} {
			if got, err := quotas.ParseGPUs("guaranteed", c.in); err != nil || got != c.want {
				t.Errorf("ParseGPUs(%q) = %d, %v; want %d", c.in, got, err, c.want)
			}
		}
		for _, bad := range []string{"", "-1", "1.2345", "four", "1e3"} {
			if _, err := quotas.ParseGPUs("guaranteed", bad); field(t, err) != "guaranteed" {
				t.Errorf("ParseGPUs(%q) = %v", bad, err)
			}
		}
	})
}

// A borrowing limit beyond what the cohort lends is refused; within it, saved.
func TestBorrowingLimitWithinTheCohort(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		svc := world(t, st)
		_, err := svc.Save(ctx, quotas.Input{Team: "vision", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "research", NominalMilli: 4000, BorrowingLimitMilli: milli(2000)}})
		if field(t, err) != "borrowing_limit" || !strings.Contains(err.Error(), "no other team of the cohort has a quota for A100 yet") {
			t.Fatalf("borrowing from an empty cohort: %v", err)
		}
		if _, err := svc.Save(ctx, quotas.Input{Team: "speech", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "research", NominalMilli: 4000, LendingLimitMilli: milli(1500)}}); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Save(ctx, quotas.Input{Team: "vision", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "research", NominalMilli: 4000, BorrowingLimitMilli: milli(2000)}})
		if field(t, err) != "borrowing_limit" || !strings.Contains(err.Error(), "2 GPUs is more than cohort research can lend for A100: 1.5 GPUs (lent by speech 1.5)") {
			t.Fatalf("borrowing beyond the cohort: %v", err)
		}
		s, err := svc.Save(ctx, quotas.Input{Team: "vision", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "research", NominalMilli: 4000, BorrowingLimitMilli: milli(1500)}})
		if err != nil || s.Warning != "" {
			t.Fatalf("borrowing within the cohort: %+v, %v", s, err)
		}
		rows, free, err := svc.Overview(ctx)
		if err != nil || len(rows) != 2 || len(free) != 0 {
			t.Fatalf("overview = %+v %+v %v", rows, free, err)
		}
		if r := rows[1]; r.Team != "vision" || r.UseMilli != 3000 || r.BorrowedMilli != 0 {
			t.Errorf("vision's row = %+v, want 3 GPUs used, none borrowed", r)
		}
	})
}

// A guarantee below the current use is saved, with a warning that says what happens.
func TestQuotaBelowUseWarns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		svc := world(t, st)
		_, free, err := svc.Overview(ctx)
		if err != nil || len(free) != 1 || free[0].Team != "vision" || free[0].GPUModel != "A100" || free[0].UseMilli != 3000 {
			t.Fatalf("unlimited use before any quota = %+v", free)
		}
		s, err := svc.Save(ctx, quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{NominalMilli: 2000}})
		if err != nil {
			t.Fatal(err)
		}
		want := "vision uses 3 GPUs of any model now, more than the new guarantee of 2 GPUs. Running jobs keep running: a quota never stops them. New jobs of vision wait until its use falls below the quota."
		if s.Warning != want {
			t.Errorf("warning = %q\nwant      %q", s.Warning, want)
		}
		rows, _, _ := svc.Overview(ctx)
		if len(rows) != 1 || rows[0].BorrowedMilli != 1000 {
			t.Errorf("rows = %+v, want 1 GPU over the guarantee", rows)
		}
		// Changing it records what it was.
		if _, err := svc.Save(ctx, quotas.Input{Team: "vision", QuotaLimits: models.QuotaLimits{NominalMilli: 8000}}); err != nil {
			t.Fatal(err)
		}
		events, _ := st.AuditEventsBefore(ctx, store.AuditFilter{Action: "quota.saved"}, 0, 5)
		if len(events) != 2 || !strings.Contains(events[0].Detail, `"before":{`) || !strings.Contains(events[0].Detail, `"guaranteed":"8"`) {
			t.Fatalf("quota audit = %+v", events)
		}
		name, err := svc.Delete(ctx, rows[0].ID)
		if err != nil || name != "vision/any model" {
			t.Fatalf("delete = %q, %v", name, err)
		}
		if _, err := svc.Delete(ctx, rows[0].ID); !errors.As(err, new(*quotas.NotFoundError)) {
			t.Errorf("deleting twice: %v", err)
		}
	})
}

// CPU and memory borrow within the cohort as GPUs do: a limit beyond what the other teams
// lend of that resource is refused, naming it; a guarantee below the use warns; the
// overview shows use and what is borrowed.
func TestCPUAndMemoryQuotas(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Parallel()
		ctx := context.Background()
		svc := world(t, st)
		// Speech lends 16 of its 32 cores and all its memory; its GPUs are not limited in CPU.
		if _, err := svc.Save(ctx, quotas.Input{Team: "speech", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "lab", NominalMilli: 4000, CPUMilli: 32000, CPULendingLimitMilli: milli(16000), MemoryMiB: 64 << 10}}); err != nil {
			t.Fatal(err)
		}
		_, err := svc.Save(ctx, quotas.Input{Team: "vision", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "lab", NominalMilli: 4000, CPUMilli: 16000, CPUBorrowingLimitMilli: milli(20000)}})
		if field(t, err) != "cpu_borrowing_limit" || !strings.Contains(err.Error(), "20 cores is more than cohort lab can lend for CPU on A100: 16 cores (lent by speech 16)") {
			t.Fatalf("borrowing more cores than the cohort lends: %v", err)
		}
		_, err = svc.Save(ctx, quotas.Input{Team: "vision", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "lab", NominalMilli: 4000, MemoryMiB: 8 << 10, MemoryBorrowingLimitMiB: milli(65 << 10)}})
		if field(t, err) != "memory_borrowing_limit" || !strings.Contains(err.Error(), "65 GiB is more than cohort lab can lend for memory on A100: 64 GiB") {
			t.Fatalf("borrowing more memory than the cohort lends: %v", err)
		}
		s, err := svc.Save(ctx, quotas.Input{Team: "vision", GPUModel: "A100", QuotaLimits: models.QuotaLimits{Cohort: "lab", NominalMilli: 4000, CPUMilli: 16000, CPUBorrowingLimitMilli: milli(16000), MemoryMiB: 128 << 10, MemoryBorrowingLimitMiB: milli(0)}})
		if err != nil {
			t.Fatal(err)
		}
		want := "vision uses 24 cores of CPU on A100 now, more than the new guarantee of 16 cores. Running jobs keep running: a quota never stops them. New jobs of vision start only as far as they can borrow from cohort lab;"
		if !strings.HasPrefix(s.Warning, want) {
			t.Errorf("warning = %q\nwant      %q…", s.Warning, want)
		}
		rows, _, err := svc.Overview(ctx)
		if err != nil || len(rows) != 2 {
			t.Fatalf("overview = %+v, %v", rows, err)
		}
		if r := rows[1]; r.Team != "vision" || r.CPUUseMilli != 24000 || r.CPUBorrowedMilli != 8000 || r.MemoryUseMiB != 96<<10 || r.MemoryBorrowedMiB != 0 ||
			*r.CPUBorrowingLimitMilli != 16000 || *r.MemoryBorrowingLimitMiB != 0 || r.CPULendingLimitMilli != nil {
			t.Errorf("vision's row = %+v", r)
		}
		events, _ := st.AuditEventsBefore(ctx, store.AuditFilter{Action: "quota.saved"}, 0, 1)
		if len(events) != 1 || !strings.Contains(events[0].Detail, `"cpu_borrowing_limit_milli":"16000"`) || !strings.Contains(events[0].Detail, `"memory_lending_limit_mib":"unlimited"`) {
			t.Fatalf("quota audit = %+v", events)
		}
	})
}
