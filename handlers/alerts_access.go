package handlers

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/authz"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
)

// costViewer is what one user may see and do about cost: platform-wide readers see
// everything; others the projects where they read cost and, where they lead, every
// project of that team.
type costViewer struct {
	userID int64
	all    bool           // reads every team's cost (admins, auditors)
	admin  bool           // changes anything (admins)
	read   map[int64]bool // projects whose cost and alerts the user sees
	manage map[int64]bool // projects whose alerts the user may acknowledge, silence and revert
}

func (h *Handler) costViewer(ctx context.Context, user *models.User) (costViewer, error) {
	v := costViewer{userID: user.ID, read: map[int64]bool{}, manage: map[int64]bool{}}
	global, err := h.authz.Global(ctx, user.ID)
	if err != nil {
		return v, err
	}
	v.all, v.admin = global.CanRead(authz.Cost), global.CanWrite(authz.Platform)
	if v.all {
		return v, nil
	}
	ms, err := h.store.MembershipsOfUser(ctx, user.ID)
	if err != nil {
		return v, err
	}
	var ledTeams []int64
	for _, m := range ms {
		perm, err := h.authz.InProject(ctx, user.ID, m.ProjectID)
		if err != nil {
			return v, err
		}
		if !perm.CanRead(authz.Cost) {
			continue
		}
		v.read[m.ProjectID] = true
		if perm.CanManage(authz.Project) { // a team lead leads the project's whole team
			p, err := h.store.ProjectByID(ctx, m.ProjectID)
			if err != nil {
				return v, err
			}
			ledTeams = append(ledTeams, p.TeamID)
		}
	}
	if len(ledTeams) == 0 {
		return v, nil
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		return v, err
	}
	for _, p := range projects {
		if slices.Contains(ledTeams, p.TeamID) {
			v.read[p.ID], v.manage[p.ID] = true, true
		}
	}
	return v, nil
}

// projectIDs lists the projects v reads, sorted (nil for platform-wide readers).
func (v costViewer) projectIDs() []int64 {
	var ids []int64
	for id := range v.read {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// alertSubject is what an alert is about, for people and for access.
type alertSubject struct {
	label    string  // "team vision", "job train (#12)"
	projects []int64 // the projects it concerns
	owner    int64   // the user whose job it is, for job alerts
}

// alertSubjects names the subjects of alerts, reading each team, project, job and
// budget once.
type alertSubjects struct {
	h        *Handler
	teams    map[int64]models.Team
	projects map[int64]models.Project
	byTeam   map[int64][]int64
	budgets  map[int64]models.Budget
	jobs     map[int64]*models.Job
}

func (h *Handler) alertSubjects(ctx context.Context) (*alertSubjects, error) {
	s := &alertSubjects{h: h, teams: map[int64]models.Team{}, projects: map[int64]models.Project{}, byTeam: map[int64][]int64{},
		budgets: map[int64]models.Budget{}, jobs: map[int64]*models.Job{}}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range teams {
		s.teams[t.ID] = t
	}
	projects, err := h.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range projects {
		s.projects[p.ID] = p
		s.byTeam[p.TeamID] = append(s.byTeam[p.TeamID], p.ID)
	}
	budgets, err := h.cost.Budgets(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range budgets {
		s.budgets[b.ID] = b
	}
	return s, nil
}

func (s *alertSubjects) of(ctx context.Context, a models.Alert) (alertSubject, error) {
	switch a.Scope {
	case governance.ScopeTeam:
		return alertSubject{label: "team " + s.teams[a.ScopeID].Name, projects: s.byTeam[a.ScopeID]}, nil
	case governance.ScopeProject:
		return alertSubject{label: "project " + s.projects[a.ScopeID].Name, projects: []int64{a.ScopeID}}, nil
	case governance.ScopeJob:
		j, ok := s.jobs[a.ScopeID]
		if !ok {
			var err error
			if j, err = s.h.store.JobByID(ctx, a.ScopeID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return alertSubject{}, err
			}
			s.jobs[a.ScopeID] = j
		}
		if j == nil {
			return alertSubject{label: fmt.Sprintf("job #%d", a.ScopeID)}, nil
		}
		return alertSubject{label: fmt.Sprintf("job %s (#%d)", j.Name, j.ID), projects: []int64{j.ProjectID}, owner: j.UserID}, nil
	case governance.ScopeBudget:
		b, ok := s.budgets[a.ScopeID]
		switch {
		case !ok:
			return alertSubject{label: fmt.Sprintf("budget #%d (deleted)", a.ScopeID)}, nil
		case b.TeamID != nil:
			return alertSubject{label: "budget of team " + s.teams[*b.TeamID].Name, projects: s.byTeam[*b.TeamID]}, nil
		case b.ProjectID != nil:
			return alertSubject{label: "budget of project " + s.projects[*b.ProjectID].Name, projects: []int64{*b.ProjectID}}, nil
		}
	}
	return alertSubject{label: a.Scope + " " + fmt.Sprint(a.ScopeID)}, nil
}

// sees reports whether v may see an alert about sub: it concerns a project v reads,
// or it is about v's own job.
func (v costViewer) sees(sub alertSubject) bool {
	if v.all || (sub.owner != 0 && sub.owner == v.userID) {
		return true
	}
	for _, p := range sub.projects {
		if v.read[p] {
			return true
		}
	}
	return false
}

// manages reports whether v may acknowledge, silence, resolve and revert an alert
// about sub: admins, and the leads of a team it concerns.
func (v costViewer) manages(sub alertSubject) bool {
	if v.admin {
		return true
	}
	for _, p := range sub.projects {
		if v.manage[p] {
			return true
		}
	}
	return false
}

// evidenceValue writes one evidence value for people: amounts in micro-units as money
// in currency.
func evidenceValue(key string, v any, currency string) string {
	if n, ok := v.(float64); ok && len(key) > 7 && key[len(key)-7:] == "_micros" {
		return accounting.FormatAmount(int64(n), currency)
	}
	return fmt.Sprint(v)
}
