package store_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The reads by a list of ids take more ids than a statement takes parameters (32,766 on
// SQLite, 65,535 on PostgreSQL): a scheduling pass asks for every GPU of the fleet and
// the jobs of every active allocation, a cost report for a month's jobs, the quotas for
// the GPUs that every running job holds. They answer in
// order, each row once, whatever the order and repeats of the ids.
func TestReadsOfMoreIDsThanAStatementTakes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		u, p := fixture(t, s)
		var jobs []int64
		for i := range 3 {
			j := &models.Job{Name: fmt.Sprintf("train-%d", i), ProjectID: p.ID, UserID: u.ID, Command: `["true"]`, PriorityClass: "research"}
			if err := s.CreateJob(ctx, j, "user:ada"); err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j.ID)
		}
		if err := s.SetJobSecretEnv(ctx, jobs[2], map[string]string{"TOKEN": "s3cret"}); err != nil {
			t.Fatal(err)
		}
		var nodes, gpus []int64
		for i := range 2 {
			n := &models.Node{Name: fmt.Sprintf("gpu-%d", i), State: models.NodeReady}
			if err := s.CreateNode(ctx, n, []models.GPUDevice{
				{Index: 0, UUID: fmt.Sprintf("GPU-%d-0", i), Model: "A100-80GB", MemoryMiB: 81920, MIGEnabled: true, Healthy: true},
				{Index: 1, UUID: fmt.Sprintf("GPU-%d-1", i), Model: "A100-80GB", MemoryMiB: 81920, Healthy: true},
			}); err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n.ID)
		}
		devs, err := s.DevicesOfNodes(ctx, nodes)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range devs {
			gpus = append(gpus, d.ID)
		}
		if err := s.ReplaceNodeDevices(ctx, nodes[1], []store.NodeDevice{
			{GPUDevice: devs[2], Slices: []models.GPUSlice{{UUID: "MIG-a", Profile: "3g.40gb", MemoryMiB: 40192, ComputeSlices: 3}, {UUID: "MIG-b", Profile: "3g.40gb", MemoryMiB: 40192, ComputeSlices: 3}}},
			{GPUDevice: devs[3]},
		}); err != nil {
			t.Fatal(err)
		}
		if devs, err = s.DevicesOfNodes(ctx, nodes); err != nil {
			t.Fatal(err)
		}
		// 70,000 ids that are no row's, the real ones among them, last first, and twice.
		many := func(real []int64) []int64 {
			ids := make([]int64, 0, 70_000+2*len(real))
			for i := range int64(70_000) {
				ids = append(ids, 1_000_000+i)
			}
			for _, id := range slices.Backward(real) {
				ids = append(ids, id, id)
			}
			return ids
		}
		gotJobs, err := s.JobsByIDs(ctx, many(jobs))
		if err != nil || len(gotJobs) != 3 || gotJobs[0].ID != jobs[0] || gotJobs[2].ID != jobs[2] {
			t.Errorf("JobsByIDs: %d jobs, %v", len(gotJobs), err)
		}
		env, err := s.SecretEnvOfJobs(ctx, many(jobs))
		if err != nil || len(env) != 1 || env[jobs[2]]["TOKEN"] != "s3cret" {
			t.Errorf("SecretEnvOfJobs: %v %v", env, err)
		}
		gotDevs, err := s.DevicesOfNodes(ctx, many(nodes))
		if err != nil || len(gotDevs) != 4 || gotDevs[0].NodeID != nodes[0] || gotDevs[1].Index != 1 || gotDevs[3].NodeID != nodes[1] {
			t.Errorf("DevicesOfNodes: %+v %v", gotDevs, err)
		}
		gpus = gpus[:0]
		for _, d := range devs {
			gpus = append(gpus, d.ID)
		}
		sl, err := s.SlicesOfDevices(ctx, many(gpus))
		if err != nil || len(sl) != 2 || sl[0].UUID != "MIG-a" || sl[1].UUID != "MIG-b" {
			t.Errorf("SlicesOfDevices: %+v %v", sl, err)
		}
		uuids := []string{"MIG-b", "GPU-0-1", "GPU-0-1"}
		for i := range 70_000 {
			uuids = append(uuids, fmt.Sprintf("GPU-none-%d", i))
		}
		specs, err := s.GPUSpecsByUUID(ctx, uuids)
		if err != nil || len(specs) != 2 || specs["GPU-0-1"] != (store.GPUSpec{Model: "A100-80GB", MemoryMiB: 81920}) ||
			specs["MIG-b"] != (store.GPUSpec{Model: "A100-80GB", MemoryMiB: 40192}) {
			t.Errorf("GPUSpecsByUUID: %+v %v", specs, err)
		}
	})
}
