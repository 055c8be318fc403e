package dispatch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/audit"
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

// Heartbeat records that node is alive, with what it reports (GPU samples, its
// jobs' CPU use) in the same transaction: one commit per heartbeat, and the write
// lock held only to write, since what the reports need is read first. A lost node
// that speaks again becomes ready; its earlier allocations ended when it was lost,
// and its lease poll no longer lists them, so the agent stops those stale attempts.
// Liveness stands when a report is refused or cannot be stored: the agent is told why.
func (s *Service) Heartbeat(ctx context.Context, node *models.Node, req agentapi.HeartbeatRequest) (agentapi.HeartbeatResponse, error) {
	if err := req.Validate(); err != nil {
		return agentapi.HeartbeatResponse{}, err
	}
	ctx = asNode(ctx, node.Name)
	now := s.now().UTC()
	var prePull []string
	var catalog map[string]int64
	if containerNode(node) {
		var err error
		if prePull, catalog, err = s.catalog.read(ctx, s.store, now); err != nil {
			return agentapi.HeartbeatResponse{}, fmt.Errorf("heartbeat of node %s: read the image catalog: %w", node.Name, err)
		}
	}
	report, reportErr := s.report(ctx, node, req, now)
	resumed, err := s.recordHeartbeat(ctx, node, req, now, catalog, report)
	if err != nil && report.Rows() > 0 {
		reportErr = errors.Join(reportErr, err)
		resumed, err = s.recordHeartbeat(ctx, node, req, now, catalog, telemetry.Report{})
	}
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
	if reportErr != nil {
		// Liveness stands; only what was refused is dropped, and the agent is told why.
		s.log.Warn("telemetry of a heartbeat dropped", "node", node.Name, "err", reportErr)
		res.TelemetryError = strings.ReplaceAll(reportErr.Error(), "\n", "; ")
	}
	return res, nil
}

// recordHeartbeat stamps the node's heartbeat, brings a lost node back, saves the
// images it holds (of the catalog, nil when not a container node) and a changed
// inventory, and writes the report, in one transaction. node is updated only
// once it committed, so that a second try after a failed one starts from the same node.
func (s *Service) recordHeartbeat(ctx context.Context, node *models.Node, req agentapi.HeartbeatRequest, now time.Time, catalog map[string]int64, report telemetry.Report) (resumed bool, err error) {
	next := *node
	err = s.store.InTx(ctx, func(tx *store.Store) error {
		if err := tx.RecordHeartbeat(ctx, node.ID, now); err != nil {
			return err
		}
		if node.State == models.NodeLost {
			err := tx.SetNodeState(ctx, node.ID, []string{models.NodeLost}, models.NodeReady, "heartbeats resumed after the node was lost")
			if err != nil && !errors.Is(err, store.ErrStale) {
				return err
			}
			next.State, next.StateReason = models.NodeReady, "heartbeats resumed after the node was lost"
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
		if req.Inventory != nil {
			devs, err := nodeDevices(*req.Inventory)
			if err != nil {
				return err
			}
			next.DriverVersion, next.CUDAVersion = req.Inventory.DriverVersion, req.Inventory.CUDAVersion
			next.LastHeartbeatAt = &now
			if err := tx.SaveNode(ctx, &next); err != nil {
				return err
			}
			if err := tx.ReplaceNodeDevices(ctx, node.ID, devs); err != nil {
				return err
			}
		}
		return report.Write(ctx, tx)
	})
	if err != nil {
		return false, err
	}
	*node = next
	return resumed, nil
}

// report reads and checks what the heartbeat adds to the history: its GPU sample,
// each device's reading attributed to the job that holds it alone, and the CPU its
// current attempts used (telemetry.MetricCPUMilli), for the input-bound hint and the
// job's page. An attempt that is not current on this node is skipped: its agent
// learns that from its leases.
func (s *Service) report(ctx context.Context, node *models.Node, req agentapi.HeartbeatRequest, now time.Time) (telemetry.Report, error) {
	if s.telemetry == nil || (req.Sample == nil && len(req.Jobs) == 0) {
		return telemetry.Report{}, nil
	}
	allocs, err := s.store.ActiveAllocations(ctx, node.ID)
	if err != nil {
		return telemetry.Report{}, err
	}
	var sample *telemetry.NodeSample
	if req.Sample != nil {
		jobs, err := telemetry.JobsOfDevices(allocs)
		if err != nil {
			return telemetry.Report{}, err
		}
		sample = &telemetry.NodeSample{NodeID: node.ID, Sample: *req.Sample, Jobs: jobs}
	}
	usage, err := s.cpuPoints(ctx, allocs, req.Jobs, now)
	if err != nil {
		return telemetry.Report{}, err
	}
	return s.telemetry.PrepareReport(ctx, now, sample, usage)
}

// cpuPoints turns the attempts' CPU use into one point per job: a job asks for CPU per
// replica, so its replicas on this node are averaged. The step is the server's clock
// in milliseconds: it grows from one report to the next.
func (s *Service) cpuPoints(ctx context.Context, allocs []models.Allocation, usage []agentapi.JobUsage, now time.Time) ([]telemetry.SystemPoint, error) {
	if len(usage) == 0 {
		return nil, nil
	}
	current := map[agentapi.AttemptRef]bool{}
	var ids []int64
	for _, a := range allocs {
		current[agentapi.AttemptRef{JobID: a.JobID, Attempt: a.Attempt, Replica: a.Replica}] = true
		ids = append(ids, a.JobID)
	}
	jobs, err := s.store.JobsByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*models.Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	sum, n := map[int64]float64{}, map[int64]float64{}
	for _, u := range usage {
		if j := byID[u.JobID]; current[u.AttemptRef] && j != nil && j.Attempt == u.Attempt {
			sum[u.JobID] += float64(u.CPUMilli)
			n[u.JobID]++
		}
	}
	points := make([]telemetry.SystemPoint, 0, len(sum))
	for _, id := range slices.Sorted(maps.Keys(sum)) {
		points = append(points, telemetry.SystemPoint{Job: byID[id], Step: now.UnixMilli(), At: now,
			Values: map[string]float64{telemetry.MetricCPUMilli: sum[id] / n[id]}})
	}
	return points, nil
}
