package handlers

import (
	"testing"

	"github.com/gantry-gpu/gantry/models"
)

// The job page words what a replica asks for, NVLink among it when the job requires it.
func TestDescribeResources(t *testing.T) {
	for _, tc := range []struct {
		job  models.Job
		want string
	}{
		{models.Job{GPUs: 8, GPUMemoryMiB: 78 << 10, NVLink: true, CPUMilli: 64000}, "8 × GPU joined by NVLink, 78 GiB GPU memory, 64 CPU cores"},
		{models.Job{GPUs: 2, GPUModel: "H100"}, "2 × H100 GPU"},
		{models.Job{GPUs: 1, GPUMilli: 250, MemoryMiB: 8 << 10, Replicas: 2}, "2 replicas, each 0.25 of a GPU, 8 GiB RAM"},
		{models.Job{MIGProfile: "1g.10gb"}, "a MIG 1g.10gb slice"},
		{models.Job{CPUMilli: 2000}, "no GPU, 2 CPU cores"},
	} {
		if got := describeResources(&tc.job); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.job, got, tc.want)
		}
	}
}
