package store

import (
	"context"
	"strings"

	"github.com/gantry-gpu/gantry/models"
)

// nodeColumns are every column of a node, in the order of nodeFields.
var nodeColumns = []string{"id", "name", "pool_id", "state", "state_reason", "drain_deadline", "labels", "cpu_milli", "memory_mib",
	"scratch_mib", "driver_version", "cuda_version", "runtime", "simulated", "confidential", "cc_state", "agent_version",
	"credential_hash", "last_heartbeat_at", "removed_at", "created_at", "updated_at"}

// nodeFields are where the columns of nodeColumns go.
func nodeFields(n *models.Node) []any {
	return []any{&n.ID, &n.Name, &n.PoolID, &n.State, &n.StateReason, &n.DrainDeadline, &n.Labels, &n.CPUMilli, &n.MemoryMiB,
		&n.ScratchMiB, &n.DriverVersion, &n.CUDAVersion, &n.Runtime, &n.Simulated, &n.Confidential, &n.CCState, &n.AgentVersion,
		&n.CredentialHash, &n.LastHeartbeatAt, &n.RemovedAt, &n.CreatedAt, &n.UpdatedAt}
}

// nodeRows reads the nodes in one of states (any, when none) and not removed (removed
// ones too withRemoved), ordered by orderBy, through readRows: a scheduling pass reads
// every ready node each second, and 5,000 through gorm took 45 ms on SQLite.
func (s *Store) nodeRows(ctx context.Context, states []string, withRemoved bool, orderBy string) ([]models.Node, error) {
	var where []string
	args := make([]any, 0, len(states))
	if len(states) > 0 {
		marks := make([]string, len(states))
		for i, st := range states {
			args = append(args, st)
			marks[i] = s.param(i + 1)
		}
		where = append(where, "state IN ("+strings.Join(marks, ", ")+")")
	}
	if !withRemoved {
		where = append(where, "removed_at IS NULL")
	}
	query := s.selectRows(strings.Join(nodeColumns, ", "), "nodes")
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY " + orderBy
	var out []models.Node
	var n models.Node
	err := s.readRows(ctx, s.rowsRead(query, args, nodeFields(&n), func() {
		out = append(out, n)
		n = models.Node{}
	}))
	return out, err
}
