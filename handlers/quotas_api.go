package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/services/store"
)

// apiQuota is a team's quota of one GPU model (empty: any model) with what its jobs
// hold now. GPUs are milli-GPUs, CPU milli-cores, memory MiB. A null borrowing limit
// is unlimited, a null lending limit lends all that is unused; a CPU or memory
// guarantee of 0 leaves that resource unlimited. Borrowed is the use beyond the
// guarantee, taken from the cohort.
type apiQuota struct {
	Team                    string `json:"team"`
	GPUModel                string `json:"gpu_model"`
	Cohort                  string `json:"cohort"`
	GPUNominalMilli         int64  `json:"gpu_nominal_milli"`
	GPUBorrowingLimitMilli  *int64 `json:"gpu_borrowing_limit_milli"`
	GPULendingLimitMilli    *int64 `json:"gpu_lending_limit_milli"`
	GPUUseMilli             int64  `json:"gpu_use_milli"`
	GPUBorrowedMilli        int64  `json:"gpu_borrowed_milli"`
	CPUNominalMilli         int64  `json:"cpu_nominal_milli"`
	CPUBorrowingLimitMilli  *int64 `json:"cpu_borrowing_limit_milli"`
	CPULendingLimitMilli    *int64 `json:"cpu_lending_limit_milli"`
	CPUUseMilli             int64  `json:"cpu_use_milli"`
	CPUBorrowedMilli        int64  `json:"cpu_borrowed_milli"`
	MemoryNominalMiB        int64  `json:"memory_nominal_mib"`
	MemoryBorrowingLimitMiB *int64 `json:"memory_borrowing_limit_mib"`
	MemoryLendingLimitMiB   *int64 `json:"memory_lending_limit_mib"`
	MemoryUseMiB            int64  `json:"memory_use_mib"`
	MemoryBorrowedMiB       int64  `json:"memory_borrowed_mib"`
}

// apiUnlimited is what a team without any quota holds of a GPU model.
type apiUnlimited struct {
	Team        string `json:"team"`
	GPUModel    string `json:"gpu_model"`
	GPUUseMilli int64  `json:"gpu_use_milli"`
}

// QuotasAPIIndex lists every quota with its use now, and the use no quota limits, as
// the cluster page shows them to anyone signed in; ?team= keeps one team's.
func (h *Handler) QuotasAPIIndex(c *gin.Context) {
	ctx := c.Request.Context()
	team := c.Query("team")
	if team != "" {
		if _, err := h.store.TeamByName(ctx, team); errors.Is(err, store.ErrNotFound) {
			jsonError(c, http.StatusBadRequest, "invalid", "there is no team "+strconv.Quote(team), "team")
			return
		} else if err != nil {
			h.serverError(c, err)
			return
		}
	}
	rows, free, err := h.quotas.Overview(ctx)
	if err != nil {
		h.serverError(c, err)
		return
	}
	quotas := make([]apiQuota, 0, len(rows))
	for _, r := range rows {
		if team != "" && r.Team != team {
			continue
		}
		quotas = append(quotas, apiQuota{Team: r.Team, GPUModel: r.GPUModel, Cohort: r.Cohort,
			GPUNominalMilli: r.NominalMilli, GPUBorrowingLimitMilli: r.BorrowingLimitMilli, GPULendingLimitMilli: r.LendingLimitMilli,
			GPUUseMilli: r.UseMilli, GPUBorrowedMilli: r.BorrowedMilli,
			CPUNominalMilli: r.CPUMilli, CPUBorrowingLimitMilli: r.CPUBorrowingLimitMilli, CPULendingLimitMilli: r.CPULendingLimitMilli,
			CPUUseMilli: r.CPUUseMilli, CPUBorrowedMilli: r.CPUBorrowedMilli,
			MemoryNominalMiB: r.MemoryMiB, MemoryBorrowingLimitMiB: r.MemoryBorrowingLimitMiB, MemoryLendingLimitMiB: r.MemoryLendingLimitMiB,
			MemoryUseMiB: r.MemoryUseMiB, MemoryBorrowedMiB: r.MemoryBorrowedMiB})
	}
	unlimited := make([]apiUnlimited, 0, len(free))
	for _, u := range free {
		if team == "" || u.Team == team {
			unlimited = append(unlimited, apiUnlimited{Team: u.Team, GPUModel: u.GPUModel, GPUUseMilli: u.UseMilli})
		}
	}
	c.JSON(http.StatusOK, gin.H{"quotas": quotas, "unlimited": unlimited})
}
