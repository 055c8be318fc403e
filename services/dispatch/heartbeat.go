package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/gpu"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// Authenticate returns the node whose agent holds credential.
func (s *Service) Authenticate(ctx context.Context, credential string) (*models.Node, error) {
	var n *models.Node
	err := fmt.Errorf("%w: no node credential", ErrUnauthorized)
	if credential != "" {
		n, err = s.store.NodeByCredentialHash(ctx, hashSecret(credential))
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: unknown or revoked node credential", ErrUnauthorized)
		}
	}
	if errors.Is(err, ErrUnauthorized) {
		s.auditRefusal(ctx, "agent.refused", "", err)
	}
	return n, err
}

// auditRefusal records a refused agent; a failure to record is logged, since the
// refusal stands either way.
func (s *Service) auditRefusal(ctx context.Context, action, node string, why error) {
	err := s.audit.Append(ctx, audit.Entry{Action: action, ObjectType: "node", ObjectID: node, Detail: map[string]string{"reason": why.Error()}})
	if err != nil {
		s.log.Error("cannot audit a refused agent", "err", err)
	}
}

// Heartbeat records that node is alive. A lost node that speaks again becomes
// ready; its earlier allocations ended when it was lost, and its lease poll no
// longer lists them, so the agent stops those stale attempts.
func (s *Service) Heartbeat(ctx context.Context, node *models.Node, req agentapi.HeartbeatRequest) (agentapi.HeartbeatResponse, error) {
	if err := req.Validate(); err != nil {
		return agentapi.HeartbeatResponse{}, err
	}
	ctx = asNode(ctx, node.Name)
	now := s.now().UTC()
	resumed := false
	var prePull []string
	var catalog map[string]int64
	if containerNode(node) {
		var err error
		if prePull, catalog, err = s.catalog.read(ctx, s.store, now); err != nil {
			return agentapi.HeartbeatResponse{}, fmt.Errorf("heartbeat of node %s: read the image catalog: %w", node.Name, err)
		}
	}
	err := s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.RecordHeartbeat(ctx, node.ID, now); err != nil {
			return err
		}
		if node.State == models.NodeLost {
			err := tx.SetNodeState(ctx, node.ID, []string{models.NodeLost}, models.NodeReady, "heartbeats resumed after the node was lost")
			if err != nil && !errors.Is(err, store.ErrStale) {
				return err
			}
			node.State, node.StateReason = models.NodeReady, "heartbeats resumed after the node was lost"
			resumed = true
			if err := s.audit.In(tx).Append(ctx, audit.Entry{Action: "node.recovered", ObjectType: "node", ObjectID: node.Name}); err != nil {
				return err
			}
		}
		if req.Images != nil && catalog != nil {
			if err := tx.ReplaceNodeImages(ctx, node.ID, imageIDs(req.Images, catalog), now); err != nil {
				return err
			}
		}
		if req.Inventory == nil {
			return nil
		}
		devs, err := nodeDevices(*req.Inventory)
		if err != nil {
			return err
		}
		node.DriverVersion, node.CUDAVersion = req.Inventory.DriverVersion, req.Inventory.CUDAVersion
		node.LastHeartbeatAt = &now
		if err := tx.SaveNode(ctx, node); err != nil {
			return err
		}
		return tx.ReplaceNodeDevices(ctx, node.ID, devs)
	})
	if err != nil {
		return agentapi.HeartbeatResponse{}, fmt.Errorf("heartbeat of node %s: %w", node.Name, err)
	}
	if resumed {
		s.log.Info("lost node is back", "node", node.Name)
		s.Kick()
	}
	if i := req.Interruption; i != nil {
		if err := s.Reclaim(ctx, node.Name, i.Deadline, i.Reason); err != nil {
			return agentapi.HeartbeatResponse{}, fmt.Errorf("heartbeat of node %s: %w", node.Name, err)
		}
		if n, err := s.store.NodeByID(ctx, node.ID); err == nil {
			node = n
		}
	}
	res := agentapi.HeartbeatResponse{NodeState: node.State, NodeStateReason: node.StateReason, Timing: s.timing(), PrePull: prePull}
	if req.Sample != nil && s.telemetry != nil {
		if err := s.ingest(ctx, node, *req.Sample, now); err != nil {
			// Liveness stands; only the sample is dropped, and the agent is told why.
			s.log.Warn("telemetry of a heartbeat dropped", "node", node.Name, "err", err)
			res.TelemetryError = err.Error()
		}
	}
	if len(req.Jobs) > 0 && s.telemetry != nil {
		if err := s.recordUsage(ctx, node, req.Jobs, now); err != nil {
			s.log.Warn("job CPU use of a heartbeat dropped", "node", node.Name, "err", err)
			if res.TelemetryError != "" {
				res.TelemetryError += "; "
			}
			res.TelemetryError += err.Error()
		}
	}
	return res, nil
}

// recordUsage stores the CPU the node's attempts used (telemetry.MetricCPUMilli), for
// the input-bound hint and the job's page. An attempt that is not current on this
// node is skipped: its agent learns that from its leases.
func (s *Service) recordUsage(ctx context.Context, node *models.Node, usage []agentapi.JobUsage, now time.Time) error {
	allocs, err := s.store.ActiveAllocations(ctx, node.ID)
	if err != nil {
		return err
	}
	current := map[agentapi.AttemptRef]bool{}
	var ids []int64
	for _, a := range allocs {
		current[agentapi.AttemptRef{JobID: a.JobID, Attempt: a.Attempt, Replica: a.Replica}] = true
		ids = append(ids, a.JobID)
	}
	jobs, err := s.store.JobsByIDs(ctx, ids)
	if err != nil {
		return err
	}
	byID := make(map[int64]*models.Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	// A job asks for CPU per replica, so its replicas on this node are averaged.
	sum, n := map[int64]float64{}, map[int64]float64{}
	for _, u := range usage {
		if j := byID[u.JobID]; current[u.AttemptRef] && j != nil && j.Attempt == u.Attempt {
			sum[u.JobID] += float64(u.CPUMilli)
			n[u.JobID]++
		}
	}
	for id, cpu := range sum {
		// The step is the server's clock in milliseconds: it grows from one report to the next.
		_, err := s.telemetry.RecordSystemMetrics(ctx, now, byID[id], now, now.UnixMilli(), map[string]float64{telemetry.MetricCPUMilli: cpu / n[id]})
		if err != nil {
			return fmt.Errorf("CPU use of job %d: %w", id, err)
		}
	}
	return nil
}

// ingest stores a heartbeat's GPU sample, each device's reading attributed to the
// job that holds it alone.
func (s *Service) ingest(ctx context.Context, node *models.Node, sample gpu.Sample, now time.Time) error {
	allocs, err := s.store.ActiveAllocations(ctx, node.ID)
	if err != nil {
		return err
	}
	jobs, err := telemetry.JobsOfDevices(allocs)
	if err != nil {
		return err
	}
	_, err = s.telemetry.Ingest(ctx, now, telemetry.NodeSample{NodeID: node.ID, Sample: sample, Jobs: jobs})
	return err
}
