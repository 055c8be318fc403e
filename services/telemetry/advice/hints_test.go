package advice_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

const allGauges = models.ReportedUtil | models.ReportedMemory | models.ReportedTemperature | models.ReportedPower | models.ReportedSMClock

// minutes builds n 1-minute rows of one GPU from t0, each shaped by f(i).
func minutes(uuid string, n int, f func(i int, s *models.TelemetrySample)) []models.TelemetrySample {
	out := make([]models.TelemetrySample, n)
	for i := range out {
		s := models.TelemetrySample{
			DeviceUUID: uuid, At: t0.Add(time.Duration(i) * time.Minute), Resolution: models.ResolutionMinute, Samples: 4, Reported: allGauges,
			UtilPct: 90, UtilMinPct: 80, UtilMaxPct: 99, MemUsedMiB: 1000, MemMaxMiB: 1000,
			TempC: 60, TempMaxC: 62, PowerW: 300, PowerMaxW: 310, SMClockMHz: 1410, SMClockMaxMHz: 1410,
		}
		if f != nil {
			f(i, &s)
		}
		out[i] = s
	}
	return out
}

func cpuPoints(milli float64, n int) []models.JobMetric {
	out := make([]models.JobMetric, n)
	for i := range out {
		out[i] = models.JobMetric{Name: "gantry/cpu_milli", Value: milli, At: t0.Add(time.Duration(i) * time.Minute)}
	}
	return out
}

func kinds(hs []advice.Hint) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Kind)
	}
	return out
}

func TestInputBound(t *testing.T) {
	th := advice.DefaultThresholds()
	history := func(util float64, cpu float64, mins int, cpuRequest int64) advice.JobHistory {
		return advice.JobHistory{
			Job: models.Job{CPUMilli: cpuRequest},
			GPU: minutes("GPU-a", mins, func(_ int, s *models.TelemetrySample) { s.UtilPct = util }),
			CPU: cpuPoints(cpu, mins),
		}
	}
	got := advice.InputBound(history(23, 7760, 42, 8000), th)
	if len(got) != 1 || got[0].Evidence != "GPU utilisation averaged 23% while the job's CPU ran at 97% of the 8 cores it asked for, over 42 min: "+
		"data loading cannot keep the GPU busy. Add data-loader workers, or ask for more CPU." {
		t.Fatalf("input bound = %+v", got)
	}
	for _, c := range []struct {
		name string
		h    advice.JobHistory
		want bool
	}{
		{"util just below 50%", history(49.9, 7200, 20, 8000), true},
		{"util at 50%", history(50, 7200, 20, 8000), false},
		{"CPU at 90% of request", history(20, 7200, 20, 8000), true},
		{"CPU at 89%", history(20, 7120, 20, 8000), false},
		{"10 min of history", history(20, 8000, 10, 8000), true},
		{"9 min of history", history(20, 8000, 9, 8000), false},
		{"no CPU request", history(20, 8000, 20, 0), false},
		{"no CPU measured", advice.JobHistory{Job: models.Job{CPUMilli: 8000}, GPU: minutes("GPU-a", 20, nil)}, false},
	} {
		if fired := len(advice.InputBound(c.h, th)) == 1; fired != c.want {
			t.Errorf("%s: fired %v, want %v", c.name, fired, c.want)
		}
	}
}

func TestMemoryOverProvisioned(t *testing.T) {
	th := advice.DefaultThresholds()
	history := func(job models.Job, peak int64, mins int) advice.JobHistory {
		return advice.JobHistory{
			Job:             job,
			GPU:             minutes("GPU-a", mins, func(i int, s *models.TelemetrySample) { s.MemMaxMiB = peak * int64(i+1) / int64(mins) }),
			DeviceMemoryMiB: map[string]int64{"GPU-a": 81920},
		}
	}
	whole := models.Job{GPUs: 1}
	got := advice.MemoryOverProvisioned(history(whole, 9318, 192), th)
	if len(got) != 1 || got[0].Evidence != "GPU memory peaked at 9.1 GiB of the 80.0 GiB each GPU gives the job (11%) over 3h12m: a smaller GPU, a fraction or a MIG slice would do." {
		t.Fatalf("over-provisioned = %+v", got)
	}
	for _, c := range []struct {
		name string
		h    advice.JobHistory
		want bool
	}{
		{"whole GPU, peak 49.9%", history(whole, 40878, 60), true},
		{"whole GPU, peak 50%", history(whole, 40960, 60), false},
		{"asked 60 GiB, peak 41%", history(models.Job{GPUs: 1, GPUMemoryMiB: 61440}, 25000, 60), true},
		{"asked 40 GiB, peak 61%", history(models.Job{GPUs: 1, GPUMemoryMiB: 40960}, 25000, 60), false},
		{"half share, peak 51% of it", history(models.Job{GPUs: 1, GPUMilli: 500}, 21000, 60), false},
		{"half share, peak 48% of it", history(models.Job{GPUs: 1, GPUMilli: 500}, 19700, 60), true},
		{"30 min of history", history(whole, 1000, 30), true},
		{"29 min of history", history(whole, 1000, 29), false},
		{"memory not reported", advice.JobHistory{Job: whole, DeviceMemoryMiB: map[string]int64{"GPU-a": 81920},
			GPU: minutes("GPU-a", 60, func(_ int, s *models.TelemetrySample) { s.Reported = models.ReportedUtil; s.MemMaxMiB = 0 })}, false},
	} {
		if fired := len(advice.MemoryOverProvisioned(c.h, th)) == 1; fired != c.want {
			t.Errorf("%s: fired %v, want %v", c.name, fired, c.want)
		}
	}
}

func TestGPUIdleAndIdleFor(t *testing.T) {
	th := advice.DefaultThresholds()
	// busy for 10 minutes, idle for n (utilisation peaking at idleMax), busy for 5.
	history := func(n int, idleMax float64, drop int) advice.JobHistory {
		g := minutes("GPU-917f298b-8696", 15+n, func(i int, s *models.TelemetrySample) {
			if i >= 10 && i < 10+n {
				s.UtilPct, s.UtilMinPct, s.UtilMaxPct = 1, 0, idleMax
			}
		})
		if drop > 0 { // samples missing in the middle of the idle stretch
			mid := 10 + n/2
			g = append(g[:mid], g[mid+drop:]...)
		}
		return advice.JobHistory{GPU: g}
	}
	got := advice.GPUIdle(history(130, 3, 0), th)
	if len(got) != 1 || got[0].Device != "GPU-917f298b-8696" ||
		got[0].Evidence != "GPU GPU-917f298b stayed below 5% utilisation for 2h10m (Mar 2 10:10 to 12:20 UTC) while the job held it: release it, or check that the job uses it." {
		t.Fatalf("idle = %+v", got)
	}
	for _, c := range []struct {
		name string
		h    advice.JobHistory
		want bool
	}{
		{"idle 30 min", history(30, 4.9, 0), true},
		{"idle 29 min", history(29, 4.9, 0), false},
		{"peaks at 5%", history(60, 5, 0), false},
		{"40 min broken by a 6-minute gap", history(46, 1, 6), false},
		{"40 min with one sample missing", history(41, 1, 1), true},
	} {
		if fired := len(advice.GPUIdle(c.h, th)) == 1; fired != c.want {
			t.Errorf("%s: fired %v, want %v", c.name, fired, c.want)
		}
	}
	// IdleFor: the stretch that reaches now, the shortest over the job's GPUs.
	idleTail := minutes("GPU-a", 50, func(i int, s *models.TelemetrySample) {
		if i >= 20 {
			s.UtilMaxPct = 2
		}
	})
	if d := advice.IdleFor(advice.JobHistory{GPU: idleTail}, th); d != 30*time.Minute {
		t.Errorf("idle for %s, want 30m", d)
	}
	other := minutes("GPU-b", 50, func(i int, s *models.TelemetrySample) {
		if i >= 40 {
			s.UtilMaxPct = 2
		}
	})
	if d := advice.IdleFor(advice.JobHistory{GPU: append(idleTail, other...)}, th); d != 10*time.Minute {
		t.Errorf("idle for %s with a GPU busy until 10 min ago, want 10m", d)
	}
	if d := advice.IdleFor(advice.JobHistory{GPU: minutes("GPU-a", 50, nil)}, th); d != 0 {
		t.Errorf("busy job idle for %s, want 0", d)
	}
}

func TestThrottling(t *testing.T) {
	th := advice.DefaultThresholds()
	// 20 minutes at the top clock, then n minutes busy at clock MHz, temp °C and power W.
	history := func(n int, clock int64, temp, power float64, limit float64) advice.JobHistory {
		h := advice.JobHistory{GPU: minutes("GPU-a", 20+n, func(i int, s *models.TelemetrySample) {
			if i >= 20 {
				s.UtilPct, s.SMClockMHz, s.SMClockMaxMHz, s.TempMaxC, s.PowerMaxW = 95, clock, clock, temp, power
			}
		})}
		if limit > 0 {
			h.PowerLimitW = map[string]float64{"GPU-a": limit}
		}
		return h
	}
	got := advice.Throttling(history(18, 1005, 87, 300, 0), th)
	if len(got) != 1 || got[0].Kind != advice.KindThermalThrottling ||
		got[0].Evidence != "GPU GPU-a ran at 1005 MHz, 71% of its 1410 MHz top clock, for 18 min while at up to 87 °C: it slows down to cool off. Check the node's cooling and airflow." {
		t.Fatalf("thermal = %+v", got)
	}
	got = advice.Throttling(history(12, 1100, 70, 392, 400), th)
	if len(got) != 1 || got[0].Kind != advice.KindPowerThrottling || !strings.Contains(got[0].Evidence, "for 12 min at its 400 W power cap") {
		t.Fatalf("power = %+v", got)
	}
	for _, c := range []struct {
		name string
		h    advice.JobHistory
		want []string
	}{
		{"hot at 85 °C for 10 min", history(10, 1005, 85, 300, 0), []string{advice.KindThermalThrottling}},
		{"84 °C", history(10, 1005, 84, 300, 0), nil},
		{"9 min", history(9, 1005, 90, 300, 0), nil},
		{"clock at 85% of top", history(30, 1199, 90, 300, 0), nil},
		{"clock just below 85%", history(30, 1198, 90, 300, 0), []string{advice.KindThermalThrottling}},
		{"power at 97% of cap", history(10, 1000, 60, 388, 400), []string{advice.KindPowerThrottling}},
		{"power at 96% of cap", history(10, 1000, 60, 384, 400), nil},
		{"power cap unknown", history(10, 1000, 60, 400, 0), nil},
		{"both", history(10, 1000, 90, 400, 400), []string{advice.KindThermalThrottling, advice.KindPowerThrottling}},
	} {
		if got := kinds(advice.Throttling(c.h, th)); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Slow but not busy (a GPU waiting for work clocks down) is no throttling.
	idle := history(30, 400, 90, 300, 0)
	for i := range idle.GPU {
		idle.GPU[i].UtilPct = 10
	}
	if got := advice.Throttling(idle, th); len(got) != 0 {
		t.Errorf("idle and slow: %+v", got)
	}
}

func TestFrequentRestarts(t *testing.T) {
	th := advice.DefaultThresholds()
	now := t0.Add(48 * time.Hour)
	requeue := func(ago time.Duration, from, reason string) models.JobEvent {
		return models.JobEvent{FromState: from, ToState: models.JobQueued, Reason: reason, CreatedAt: now.Add(-ago)}
	}
	base := []models.JobEvent{
		{ToState: models.JobQueued, Reason: "submitted", CreatedAt: now.Add(-30 * time.Hour)},
		requeue(20*time.Hour, models.JobRunning, "node lost"),
		requeue(10*time.Hour, models.JobRunning, "exit code 137"),
	}
	got := advice.FrequentRestarts(advice.JobHistory{Now: now, Events: append(base, requeue(time.Hour, models.JobRunning, "node lost"))}, th)
	if len(got) != 1 || got[0].Evidence != "The job went back to the queue 3 times in the last 24 h (2× node lost, 1× exit code 137): "+
		"each restart loses the work since its last checkpoint. Checkpoint more often, or look into the cause." {
		t.Fatalf("restarts = %+v", got)
	}
	for _, c := range []struct {
		name   string
		events []models.JobEvent
		want   bool
	}{
		{"2 restarts", base, false},
		{"third restart 23 h ago", append(base[:2:2], requeue(10*time.Hour, models.JobRunning, "x"), requeue(23*time.Hour, models.JobPreempting, "preempted")), true},
		{"third restart 25 h ago", append(base[:2:2], requeue(10*time.Hour, models.JobRunning, "x"), requeue(25*time.Hour, models.JobRunning, "y")), false},
		{"released from hold", append(base, requeue(time.Hour, models.JobHeld, "released")), false},
	} {
		if fired := len(advice.FrequentRestarts(advice.JobHistory{Now: now, Events: c.events}, th)) == 1; fired != c.want {
			t.Errorf("%s: fired %v, want %v", c.name, fired, c.want)
		}
	}
}

// A healthy, busy job gets no hint at all.
func TestHintsQuietForAHealthyJob(t *testing.T) {
	h := advice.JobHistory{
		Job:             models.Job{GPUs: 1, CPUMilli: 8000},
		GPU:             minutes("GPU-a", 120, func(_ int, s *models.TelemetrySample) { s.MemMaxMiB = 70000 }),
		DeviceMemoryMiB: map[string]int64{"GPU-a": 81920},
		CPU:             cpuPoints(4000, 120),
		Now:             t0.Add(2 * time.Hour),
	}
	if got := advice.Hints(h, advice.DefaultThresholds()); len(got) != 0 {
		t.Errorf("hints for a healthy job: %+v", got)
	}
}
