package advice_test

import (
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/telemetry/advice"
)

// Prices per hour in micro-units.
var shapes = []advice.Shape{
	{Model: "A100-80GB", Milli: 1000, MemoryMiB: 81920, PricePerHourMicros: 4_000_000},
	{Model: "A100-80GB", Milli: 500, MemoryMiB: 40960, PricePerHourMicros: 2_000_000},
	{Model: "A100-40GB", Milli: 1000, MemoryMiB: 40960, PricePerHourMicros: 3_000_000},
	{Model: "A100-40GB", Milli: 500, MemoryMiB: 20480, PricePerHourMicros: 1_500_000},
	{Model: "A100-40GB", MIGProfile: "3g.20gb", MemoryMiB: 19968, PricePerHourMicros: 1_300_000},
	{Model: "L4-24GB", Milli: 1000, MemoryMiB: 23034, PricePerHourMicros: 800_000},
	{Model: "H100-80GB", Milli: 1000, MemoryMiB: 81559, PricePerHourMicros: 9_000_000},
}

func runs(n int, model string, active int, peakMiB int64, util float64) []advice.Run {
	out := make([]advice.Run, n)
	for i := range out {
		// Spread the peaks below the highest, which the last run reaches.
		out[i] = advice.Run{JobID: int64(i + 1), Model: model, ActiveGPUs: active, PeakMemoryMiB: peakMiB - int64(n-1-i)*100, PeakUtilPct: util - float64(n-1-i)}
	}
	return out
}

func TestRecommendCheaperProfile(t *testing.T) {
	opt := advice.DefaultRecommendOptions()
	whole80 := advice.Request{Model: "A100-80GB", GPUs: 1}
	// 19.2 GiB + 20% = 23 GiB does not fit half an A100-40GB (20 GiB) nor an L4
	// (22.5 GiB); 41% + 20% of an A100 fits half of one.
	rec, ok := advice.Recommend(whole80, runs(8, "A100-80GB", 1, 19661, 41), shapes, opt)
	if !ok {
		t.Fatal("no recommendation")
	}
	if rec.Shape.Model != "A100-80GB" || rec.Shape.Milli != 500 || rec.GPUs != 1 || rec.CurrentPerHourMicros != 4_000_000 || rec.PerHourMicros != 2_000_000 ||
		rec.Evidence != "8 earlier runs peaked at 19.2 GiB and 41% utilisation: a 0.5 share of an A100-80GB would fit; saves 50%" {
		t.Fatalf("recommendation = %+v", rec)
	}
	// Smaller peaks: 35% of an A100 + 20% = 0.42 is more than an L4 (0.39) but fits
	// a 3g MIG slice (3/7 = 0.43), which holds 14 GiB + 20%.
	rec, ok = advice.Recommend(whole80, runs(5, "A100-80GB", 1, 14336, 35), shapes, opt)
	if !ok || rec.Shape.MIGProfile != "3g.20gb" || rec.Evidence != "5 earlier runs peaked at 14.0 GiB and 35% utilisation: a 3g.20gb MIG slice of an A100-40GB would fit; saves 68%" {
		t.Fatalf("MIG recommendation = %+v, %v", rec, ok)
	}
	// Light compute: an L4 is 0.39 of an A100; 25% of an A100 + 20% = 0.3 fits it.
	rec, ok = advice.Recommend(advice.Request{GPUs: 1}, runs(4, "A100-80GB", 1, 16000, 25), shapes, opt)
	if !ok || rec.Shape.Model != "L4-24GB" || rec.Evidence != "4 earlier runs peaked at 15.6 GiB and 25% utilisation: an L4-24GB would fit; saves 80%" {
		t.Fatalf("L4 recommendation = %+v, %v", rec, ok)
	}
	// Four H100s of which the runs used two, busy: two A100-80GB are not enough
	// compute (90% of an H100 is 2.85 A100s), two H100s are.
	rec, ok = advice.Recommend(advice.Request{Model: "H100-80GB", GPUs: 4}, runs(3, "H100-80GB", 2, 60000, 90), shapes, opt)
	if !ok || rec.Shape.Model != "H100-80GB" || rec.GPUs != 2 || rec.PerHourMicros != 18_000_000 ||
		rec.Evidence != "3 earlier runs peaked at 58.6 GiB and 90% utilisation: 2 × H100-80GB would fit; saves 50%" {
		t.Fatalf("multi-GPU recommendation = %+v, %v", rec, ok)
	}
}

func TestRecommendNothingWhenUnsure(t *testing.T) {
	opt := advice.DefaultRecommendOptions()
	whole80 := advice.Request{Model: "A100-80GB", GPUs: 1}
	for _, c := range []struct {
		name string
		req  advice.Request
		runs []advice.Run
	}{
		{"2 runs are too few", whole80, runs(2, "A100-80GB", 1, 8000, 20)},
		{"peaks need the whole GPU", whole80, runs(5, "A100-80GB", 1, 70000, 95)},
		{"runs on an unknown model", whole80, runs(5, "Z9-1GB", 1, 100, 1)},
		{"no price for the request", advice.Request{Model: "B200-192GB", GPUs: 1}, runs(5, "A100-80GB", 1, 8000, 20)},
		{"already the cheapest that fits", advice.Request{Model: "L4-24GB", GPUs: 1}, runs(5, "L4-24GB", 1, 8000, 60)},
	} {
		if rec, ok := advice.Recommend(c.req, c.runs, shapes, opt); ok {
			t.Errorf("%s: recommended %+v", c.name, rec)
		}
	}
	// A saving below the minimum is not worth a recommendation: half an A100-40GB
	// (1.5) against a MIG slice priced 1.4 saves 7%; priced 1.3, 13%.
	few := []advice.Shape{
		{Model: "A100-40GB", Milli: 500, MemoryMiB: 20480, PricePerHourMicros: 1_500_000},
		{Model: "A100-40GB", MIGProfile: "3g.20gb", MemoryMiB: 19968, PricePerHourMicros: 1_400_000},
	}
	half := advice.Request{Model: "A100-40GB", GPUs: 1, Milli: 500}
	if rec, ok := advice.Recommend(half, runs(5, "A100-40GB", 1, 4000, 10), few, opt); ok {
		t.Errorf("7%% saving recommended: %+v", rec)
	}
	few[1].PricePerHourMicros = 1_300_000
	if rec, ok := advice.Recommend(half, runs(5, "A100-40GB", 1, 4000, 10), few, opt); !ok || rec.Shape.MIGProfile != "3g.20gb" {
		t.Errorf("13%% saving not recommended: %+v, %v", rec, ok)
	}
}

func TestSimilarRuns(t *testing.T) {
	img := int64(7)
	other := int64(8)
	job := models.Job{ID: 100, ProjectID: 1, ImageID: &img, Command: `["python","train.py","--lr","0.1","--epochs","10"]`}
	done := func(id, project int64, image *int64, command string) models.Job {
		return models.Job{ID: id, ProjectID: project, ImageID: image, Command: command, State: models.JobSucceeded}
	}
	failed := done(6, 1, &img, job.Command)
	failed.State = models.JobFailed
	got := advice.Similar(job, []models.Job{
		done(1, 1, &img, `["python","train.py","--lr","0.01","--epochs","10"]`), // one argument differs
		done(2, 1, &img, `["python","train.py","--lr=0.1","--epochs=10"]`),      // flags written with =
		done(3, 1, &img, `["python","eval.py","--ckpt","last"]`),                // another script
		done(4, 2, &img, job.Command),                                           // another project
		done(5, 1, &other, job.Command),                                         // another image
		failed,
		done(7, 1, &img, `["torchrun","train.py","--lr","0.1","--epochs","10"]`), // another program
		done(100, 1, &img, job.Command),                                          // the job itself
	}, 10)
	if len(got) != 2 || got[0].ID != 2 || got[1].ID != 1 {
		t.Errorf("similar = %v, want jobs 2 and 1", got)
	}
	if got := advice.Similar(job, []models.Job{done(1, 1, &img, job.Command), done(2, 1, &img, job.Command)}, 1); len(got) != 1 || got[0].ID != 2 {
		t.Errorf("limit 1 = %v, want the newest", got)
	}
}
