package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
)

// change is one allowed state-changing request and the audit event it must append.
type change struct {
	as   string     // the role that makes it
	path string     // the route's path, filled in
	form url.Values // a page's form (the CSRF token is added)
	json string     // an API request's body
	// The event: its action, object type and object id.
	action, object, id string
}

// mutations say, for every state-changing route but the agent protocol's and the job
// token's (see docs/ARCHITECTURE.md, "Audit"), how to make one real change through it
// and which event records it. Each builds what its change needs first. A
// state-changing route missing here fails TestEveryMutationIsAudited.
var mutations = map[string]func(w *world) change{
	"POST /login": func(w *world) change {
		u, password := w.userWithPassword("lin")
		return change{as: anonymous, path: "/login", form: url.Values{"username": {u.Username}, "password": {password}},
			action: identity.ActionLogin, object: "user", id: u.Username}
	},
	"POST /logout": func(w *world) change {
		return change{as: models.RoleMember, path: "/logout", action: "logout", object: "user", id: w.users[models.RoleMember].Username}
	},
	"POST /tokens": func(w *world) change {
		return change{as: models.RoleMember, path: "/tokens", form: url.Values{"name": {"nightly"}, "scope": {"read"}, "days": {"30"}},
			action: "token.created", object: "token"}
	},
	"POST /tokens/:id/revoke": func(w *world) change {
		_, tok, err := w.id.CreateToken(w.ctx, w.users[models.RoleMember], "old", identity.ScopeRead, 24*time.Hour)
		w.must(err)
		return change{as: models.RoleMember, path: fmt.Sprintf("/tokens/%d/revoke", tok.ID), action: "token.revoked", object: "token", id: fmt.Sprint(tok.ID)}
	},
	"POST /account": func(w *world) change {
		return change{as: models.RoleMember, path: "/account", form: url.Values{},
			action: "feedback.emails_off", object: "user", id: w.users[models.RoleMember].Username}
	},
	"POST /alerts/:id/acknowledge": func(w *world) change {
		a := w.alert("")
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/alerts/%d/acknowledge", a.ID), action: "alert.acknowledged", object: "alert", id: fmt.Sprint(a.ID)}
	},
	"POST /alerts/:id/silence": func(w *world) change {
		a := w.alert("")
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/alerts/%d/silence", a.ID), form: url.Values{"for": {"1h"}},
			action: "alert.silenced", object: "alert", id: fmt.Sprint(a.ID)}
	},
	"POST /alerts/:id/resolve": func(w *world) change {
		a := w.alert("")
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/alerts/%d/resolve", a.ID), action: "alert.resolved", object: "alert", id: fmt.Sprint(a.ID)}
	},
	"POST /alerts/:id/revert": func(w *world) change {
		a := w.alert(`{"kind":"hold","rule":"team-cost-spike","dry_run":false,"at":"2026-03-01T09:00:00Z","jobs":[]}`)
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/alerts/%d/revert", a.ID), action: "governance.action.reverted", object: "alert", id: fmt.Sprint(a.ID)}
	},
	"POST /admin/cost/rates": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/cost/rates", form: url.Values{"resource": {"gpu"}, "gpu_model": {"A100-80GB"}, "rate": {"2.5"}, "effective_from": {"2026-01-01T00:00"}},
			action: "cost_rate.created", object: "cost_rate"}
	},
	"POST /admin/cost/currency": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/cost/currency", form: url.Values{"currency": {"EUR"}},
			action: "cost.currency_set", object: "setting", id: "cost.currency"}
	},
	"POST /admin/cost/rates/:id/delete": func(w *world) change {
		r := &models.CostRate{Resource: models.ResourceCPU, Unit: "core-hour", RateMicros: 10_000, EffectiveFrom: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		w.must(w.st.CreateCostRate(w.ctx, r))
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/cost/rates/%d/delete", r.ID), action: "cost_rate.deleted", object: "cost_rate", id: fmt.Sprint(r.ID)}
	},
	"POST /admin/cost/budgets": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/cost/budgets", form: url.Values{"owner": {fmt.Sprintf("project:%d", w.projects[true].ID)}, "amount": {"100"}, "thresholds": {"50, 80"}},
			action: "budget.created", object: "budget"}
	},
	"POST /admin/cost/budgets/:id": func(w *world) change {
		b := w.budget()
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/cost/budgets/%d", b.ID), form: url.Values{"amount": {"150"}, "thresholds": {"100"}},
			action: "budget.updated", object: "budget", id: fmt.Sprint(b.ID)}
	},
	"POST /admin/cost/budgets/:id/delete": func(w *world) change {
		b := w.budget()
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/cost/budgets/%d/delete", b.ID), action: "budget.deleted", object: "budget", id: fmt.Sprint(b.ID)}
	},
	"POST /admin/cost/rules": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/cost/rules", form: w.ruleForm("idle-" + w.unique()), action: "alert_rule.created", object: "alert_rule"}
	},
	"POST /admin/cost/rules/:id": func(w *world) change {
		r := &models.AlertRule{Name: "idle-" + w.unique(), Metric: "job_idle_minutes", Threshold: 30, Action: "notify", Channels: "[]"}
		w.must(w.st.CreateAlertRule(w.ctx, r))
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/cost/rules/%d", r.ID), form: w.ruleForm(r.Name),
			action: "alert_rule.updated", object: "alert_rule", id: fmt.Sprint(r.ID)}
	},
	"POST /admin/cost/evaluate": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/cost/evaluate", action: "alert_rules.evaluated", object: "alert_rule", id: "all"}
	},
	"POST /admin/cost/channels": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/cost/channels", form: url.Values{"name": {"chat-" + w.unique()}, "kind": {"webhook"}, "target": {"https://hooks.example.com/x"}, "enabled": {"on"}},
			action: "channel.created", object: "channel"}
	},
	"POST /admin/cost/channels/:id": func(w *world) change {
		ch := &models.NotificationChannel{Name: "chat-" + w.unique(), Kind: "webhook", Target: "https://hooks.example.com/y", Enabled: true}
		w.must(w.st.CreateNotificationChannel(w.ctx, ch))
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/cost/channels/%d", ch.ID), form: url.Values{"name": {ch.Name}, "kind": {"webhook"}},
			action: "channel.updated", object: "channel", id: fmt.Sprint(ch.ID)}
	},
	"POST /api/v1/usage": func(w *world) change {
		r := &models.CostRate{Resource: models.ResourceEgress, Unit: "GiB", RateMicros: 90_000, EffectiveFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
		w.must(w.st.CreateCostRate(w.ctx, r))
		p := w.projects[true]
		return change{as: models.RoleAdmin, path: "/api/v1/usage",
			json:   fmt.Sprintf(`{"resource": "egress", "project": %q, "bytes": 1073741824, "from": "2026-03-01T09:00:00Z", "to": "2026-03-01T10:00:00Z"}`, p.Name),
			action: "usage.recorded", object: "project", id: fmt.Sprint(p.ID)}
	},
	"POST /admin/images": func(w *world) change {
		name := "pytorch-" + w.unique()
		return change{as: models.RoleAdmin, path: "/admin/images", form: url.Values{"name": {name}, "reference": {"nvcr.io/nvidia/pytorch:24.10-py3"},
			"framework": {"pytorch"}, "framework_version": {"2.5"}, "cuda_version": {"12.4"}, "min_driver": {"550.54"}, "python_version": {"3.10"}},
			action: "image.created", object: "image", id: name}
	},
	"POST /admin/images/:name/status": func(w *world) change {
		img := w.image()
		return change{as: models.RoleAdmin, path: "/admin/images/" + img.Name + "/status", form: url.Values{"status": {"certified"}},
			action: "image.certified", object: "image", id: img.Name}
	},
	"POST /api/v1/images": func(w *world) change {
		name := "api-image-" + w.unique()
		return change{as: models.RoleAdmin, path: "/api/v1/images", json: `{"name": "` + name + `", "reference": "nvcr.io/nvidia/pytorch:24.10-py3", "framework": "pytorch"}`,
			action: "image.created", object: "image", id: name}
	},
	"POST /api/v1/images/:name/status": func(w *world) change {
		img := w.image()
		return change{as: models.RoleAdmin, path: "/api/v1/images/" + img.Name + "/status", json: `{"status": "deprecated"}`,
			action: "image.deprecated", object: "image", id: img.Name}
	},
	"POST /admin/images/:name/prepull": func(w *world) change {
		img := w.image()
		return change{as: models.RoleAdmin, path: "/admin/images/" + img.Name + "/prepull", form: url.Values{"prepull": {"true"}},
			action: "image.prepull_changed", object: "image", id: img.Name}
	},
	"POST /feedback": func(w *world) change {
		return change{as: models.RoleMember, path: "/feedback", form: url.Values{"category": {"idea"}, "title": {"More A100s"}, "body": {"Queues are long"}, "page": {"/jobs"}},
			action: "feedback.created", object: "feedback"}
	},
	"POST /feedback/:id/vote": func(w *world) change {
		it := w.feedback()
		return change{as: models.RoleViewer, path: fmt.Sprintf("/feedback/%d/vote", it.ID), form: url.Values{"vote": {"true"}},
			action: "feedback.voted", object: "feedback", id: fmt.Sprint(it.ID)}
	},
	"POST /feedback/:id/comments": func(w *world) change {
		it := w.feedback()
		return change{as: models.RoleViewer, path: fmt.Sprintf("/feedback/%d/comments", it.ID), form: url.Values{"body": {"Same here"}},
			action: "feedback.commented", object: "feedback", id: fmt.Sprint(it.ID)}
	},
	"POST /feedback/:id/answer": func(w *world) change {
		it := w.feedback()
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/feedback/%d/answer", it.ID), form: url.Values{"status": {"planned"}, "answer": {"In January."}},
			action: "feedback.answered", object: "feedback", id: fmt.Sprint(it.ID)}
	},
	"POST /admin/people/:user/disable": func(w *world) change {
		u := w.user("dora")
		return change{as: models.RoleAdmin, path: "/admin/people/" + u.Username + "/disable", form: url.Values{"confirm": {"yes"}},
			action: "user.disabled", object: "user", id: u.Username}
	},
	"POST /admin/people/:user/enable": func(w *world) change {
		u := w.user("eve")
		u.Disabled = true
		w.must(w.st.UpdateUser(w.ctx, u))
		return change{as: models.RoleAdmin, path: "/admin/people/" + u.Username + "/enable", action: "user.enabled", object: "user", id: u.Username}
	},
	"POST /admin/people/:user/roles": func(w *world) change {
		u := w.user("abe")
		return change{as: models.RoleAdmin, path: "/admin/people/" + u.Username + "/roles", form: url.Values{"auditor": {"true"}},
			action: "role.granted", object: "user", id: u.Username}
	},
	"POST /admin/teams": func(w *world) change {
		name := "team-" + w.unique()
		return change{as: models.RoleAdmin, path: "/admin/teams", form: url.Values{"name": {name}, "display_name": {"A team"}}, action: "team.created", object: "team", id: name}
	},
	"POST /admin/teams/:team/archive": func(w *world) change {
		tm := w.team()
		return change{as: models.RoleAdmin, path: "/admin/teams/" + tm.Name + "/archive", form: url.Values{"archived": {"true"}, "confirm": {"yes"}},
			action: "team.archived", object: "team", id: tm.Name}
	},
	"POST /admin/projects": func(w *world) change {
		tm := w.team()
		name := "proj-" + w.unique()
		return change{as: models.RoleAdmin, path: "/admin/projects", form: url.Values{"team": {tm.Name}, "name": {name}}, action: "project.created", object: "project", id: name}
	},
	"POST /admin/projects/:project/archive": func(w *world) change {
		p := w.project()
		return change{as: models.RoleAdmin, path: "/admin/projects/" + p.Name + "/archive", form: url.Values{"archived": {"true"}, "confirm": {"yes"}},
			action: "project.archived", object: "project", id: p.Name}
	},
	"POST /admin/projects/:project/members": func(w *world) change {
		p, u := w.project(), w.user("gus")
		return change{as: models.RoleAdmin, path: "/admin/projects/" + p.Name + "/members", form: url.Values{"username": {u.Username}, "role": {"member"}},
			action: "role.granted", object: "user", id: u.Username}
	},
	"POST /admin/projects/:project/members/:user/remove": func(w *world) change {
		p, u := w.project(), w.user("hal")
		w.must(w.az.SetProjectRole(w.ctx, u, p, models.RoleMember))
		return change{as: models.RoleAdmin, path: "/admin/projects/" + p.Name + "/members/" + u.Username + "/remove", form: url.Values{"confirm": {"yes"}},
			action: "role.revoked", object: "user", id: u.Username}
	},
	"POST /admin/groups": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/groups", form: url.Values{"group": {"ml-" + w.unique()}, "role": {"member"}, "team": {"vision"}},
			action: "group_mapping.created", object: "group_mapping"}
	},
	"POST /admin/groups/:id/delete": func(w *world) change {
		g := &models.GroupMapping{Group: "ml-" + w.unique(), Role: models.RoleMember, ProjectID: &w.projects[true].ID}
		w.must(w.st.CreateGroupMapping(w.ctx, g))
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/groups/%d/delete", g.ID), form: url.Values{"confirm": {"yes"}},
			action: "group_mapping.deleted", object: "group_mapping", id: fmt.Sprint(g.ID)}
	},
	"POST /admin/quotas": func(w *world) change {
		tm := w.team()
		return change{as: models.RoleAdmin, path: "/admin/quotas", form: url.Values{"team": {tm.Name}, "guaranteed": {"4"}},
			action: "quota.saved", object: "quota", id: tm.Name + "/any model"}
	},
	"POST /admin/quotas/:id/delete": func(w *world) change {
		tm := w.team()
		q := &models.Quota{TeamID: tm.ID, QuotaLimits: models.QuotaLimits{NominalMilli: 2000}}
		w.must(w.st.SaveQuota(w.ctx, q))
		return change{as: models.RoleAdmin, path: fmt.Sprintf("/admin/quotas/%d/delete", q.ID), form: url.Values{"confirm": {"yes"}},
			action: "quota.deleted", object: "quota", id: tm.Name + "/any model"}
	},
	"POST /admin/nodes/:name/state": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/admin/nodes/" + n.Name + "/state", form: url.Values{"state": {models.NodeCordoned}},
			action: "node.cordoned", object: "node", id: n.Name}
	},
	"POST /admin/nodes/:name/labels": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/admin/nodes/" + n.Name + "/labels", form: url.Values{"labels": {"rack=3\nzone=b"}},
			action: "node.labels_changed", object: "node", id: n.Name}
	},
	"POST /admin/nodes/:name/pool": func(w *world) change {
		n, p := w.node(), w.pool()
		return change{as: models.RoleAdmin, path: "/admin/nodes/" + n.Name + "/pool", form: url.Values{"pool": {p.Name}},
			action: "node.pool_changed", object: "node", id: n.Name}
	},
	"POST /admin/nodes/:name/confidential": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/admin/nodes/" + n.Name + "/confidential", form: url.Values{"confidential": {"true"}},
			action: "node.confidential_flagged", object: "node", id: n.Name}
	},
	"POST /admin/projects/:project/placement": func(w *world) change {
		p := w.project()
		return change{as: models.RoleAdmin, path: "/admin/projects/" + p.Name + "/placement", form: url.Values{"regions": {"eu-west-1"}, "confidential_only": {"true"}},
			action: "project.placement_changed", object: "project", id: p.Name}
	},
	"POST /admin/nodes/:name/remove": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/admin/nodes/" + n.Name + "/remove", form: url.Values{"confirm": {"yes"}},
			action: "node.removed", object: "node", id: n.Name}
	},
	"POST /admin/pools/:name/forget-slurm-jobs": func(w *world) change {
		p := &models.NodePool{Name: "hpc-" + w.unique(), Provider: "slurm", CapacityType: models.CapacityOwned}
		w.must(w.st.CreateNodePool(w.ctx, p))
		n := &models.Node{Name: p.Name + ".node1", State: models.NodeDown, StateReason: "Slurm pool reaches another cluster: its slurm.conf now reaches Slurm cluster b, not a",
			Runtime: models.RuntimeSlurm, Labels: `{"slurm.cluster":"a"}`, PoolID: &p.ID}
		w.must(w.st.CreateNode(w.ctx, n, nil))
		w.must(w.st.MarkSlurmClusterMove(w.ctx, &models.SlurmClusterMove{PoolID: p.ID, JobsCluster: "a", ConfCluster: "b", Reason: n.StateReason,
			FoundAt: time.Now(), LastSeenAt: time.Now()}))
		j := w.job(models.JobHeld)
		w.must(w.st.CreateSlurmJob(w.ctx, &models.SlurmJob{PoolID: p.ID, JobID: j.ID, Attempt: j.Attempt, CurrentAttempt: j.Attempt, SlurmJobID: "7"}))
		return change{as: models.RoleAdmin, path: "/admin/pools/" + p.Name + "/forget-slurm-jobs", form: url.Values{"confirm": {"yes"}},
			action: "pool.slurm_jobs_forgotten", object: "pool", id: p.Name}
	},
	"POST /admin/join-tokens": func(w *world) change {
		name := "rack-" + w.unique()
		return change{as: models.RoleAdmin, path: "/admin/join-tokens", form: url.Values{"name": {name}, "expires": {"24h"}},
			action: "join_token.created", object: "join_token", id: name}
	},
	"POST /admin/join-tokens/revoke": func(w *world) change {
		name := "rack-" + w.unique()
		w.must(w.st.CreateJoinToken(w.ctx, &models.JoinToken{Name: name, Hash: "h-" + name, ExpiresAt: time.Now().Add(time.Hour)}))
		return change{as: models.RoleAdmin, path: "/admin/join-tokens/revoke", form: url.Values{"name": {name}, "confirm": {"yes"}},
			action: "join_token.revoked", object: "join_token", id: name}
	},
	"POST /admin/settings": func(w *world) change {
		return change{as: models.RoleAdmin, path: "/admin/settings", form: url.Values{"local_login": {"on"}, "session_idle": {"11h"}, "session_lifetime": {"100h"}},
			action: "settings.changed", object: "setting", id: "login"}
	},
	"POST /admin/priority-classes": func(w *world) change {
		name := "nightly-" + w.unique()
		return change{as: models.RoleAdmin, path: "/admin/priority-classes", form: url.Values{"name": {name}, "weight": {"50"}, "checkpoint_grace": {"30s"}},
			action: "priority_class.created", object: "priority_class", id: name}
	},
	"POST /admin/priority-classes/:name/delete": func(w *world) change {
		c := &models.PriorityClass{Name: "nightly-" + w.unique(), Weight: 40}
		w.must(w.st.SavePriorityClass(w.ctx, c))
		return change{as: models.RoleAdmin, path: "/admin/priority-classes/" + c.Name + "/delete", form: url.Values{"confirm": {"yes"}},
			action: "priority_class.deleted", object: "priority_class", id: c.Name}
	},
	"PUT /api/v1/projects/:project/members/:user": func(w *world) change {
		u := w.user("ivy")
		return change{as: models.RoleTeamLead, path: "/api/v1/projects/" + w.projects[true].Name + "/members/" + u.Username, json: `{"role": "viewer"}`,
			action: "role.granted", object: "user", id: u.Username}
	},
	"DELETE /api/v1/projects/:project/members/:user": func(w *world) change {
		u := w.user("jon")
		w.must(w.az.SetProjectRole(w.ctx, u, w.projects[true], models.RoleViewer))
		return change{as: models.RoleTeamLead, path: "/api/v1/projects/" + w.projects[true].Name + "/members/" + u.Username,
			action: "role.revoked", object: "user", id: u.Username}
	},
	"POST /jobs": func(w *world) change {
		return change{as: models.RoleMember, path: "/jobs", form: url.Values{"project": {w.projects[true].Name}, "name": {"train-1"}, "command": {"python train.py"},
			"gpus": {"0"}, "cpu_cores": {"1"}, "memory_gib": {"1"}, "replicas": {"1"}, "priority_class": {"research"}},
			action: "job.submitted", object: "job"}
	},
	"POST /jobs/templates": func(w *world) change {
		return change{as: models.RoleMember, path: "/jobs/templates", form: url.Values{"project": {w.projects[true].Name}, "template_name": {"nightly-" + w.unique()},
			"name": {"train-1"}, "command": {"python train.py"}, "gpus": {"0"}, "cpu_cores": {"1"}, "memory_gib": {"1"}, "replicas": {"1"}, "priority_class": {"research"}},
			action: "job_template.saved", object: "job_template"}
	},
	"POST /projects/:project/templates/:name/rename": func(w *world) change {
		t := w.template(models.RoleMember)
		return change{as: models.RoleMember, path: "/projects/" + w.projects[true].Name + "/templates/" + t.Name + "/rename", form: url.Values{"name": {t.Name + "-2"}},
			action: "job_template.renamed", object: "job_template", id: fmt.Sprint(t.ID)}
	},
	"POST /projects/:project/templates/:name/delete": func(w *world) change {
		t := w.template(models.RoleMember)
		return change{as: models.RoleTeamLead, path: "/projects/" + w.projects[true].Name + "/templates/" + t.Name + "/delete",
			action: "job_template.deleted", object: "job_template", id: fmt.Sprint(t.ID)}
	},
	"POST /api/v1/projects/:project/templates": func(w *world) change {
		return change{as: models.RoleMember, path: "/api/v1/projects/" + w.projects[true].Name + "/templates",
			json:   fmt.Sprintf(`{"name": "api-%s", "spec": {"name": "train", "command": ["true"]}}`, w.unique()),
			action: "job_template.saved", object: "job_template"}
	},
	"DELETE /api/v1/projects/:project/templates/:name": func(w *world) change {
		t := w.template(models.RoleMember)
		return change{as: models.RoleMember, path: "/api/v1/projects/" + w.projects[true].Name + "/templates/" + t.Name,
			action: "job_template.deleted", object: "job_template", id: fmt.Sprint(t.ID)}
	},
	"POST /jobs/:id/cancel": func(w *world) change {
		j := w.job(models.JobQueued)
		return change{as: models.RoleMember, path: fmt.Sprintf("/jobs/%d/cancel", j.ID), form: url.Values{"confirm": {"yes"}}, action: "job.cancelled", object: "job", id: fmt.Sprint(j.ID)}
	},
	"POST /jobs/:id/hold": func(w *world) change {
		j := w.job(models.JobQueued)
		return change{as: models.RoleMember, path: fmt.Sprintf("/jobs/%d/hold", j.ID), action: "job.held", object: "job", id: fmt.Sprint(j.ID)}
	},
	"POST /jobs/:id/release": func(w *world) change {
		j := w.job(models.JobHeld)
		return change{as: models.RoleMember, path: fmt.Sprintf("/jobs/%d/release", j.ID), action: "job.released", object: "job", id: fmt.Sprint(j.ID)}
	},
	"POST /jobs/:id/rerun": func(w *world) change {
		j := w.job(models.JobQueued)
		return change{as: models.RoleMember, path: fmt.Sprintf("/jobs/%d/rerun", j.ID), action: "job.submitted", object: "job"}
	},
	"POST /api/v1/jobs": func(w *world) change {
		return change{as: models.RoleMember, path: "/api/v1/jobs", json: fmt.Sprintf(`{"project": %q, "name": "api-job", "command": ["true"]}`, w.projects[true].Name),
			action: "job.submitted", object: "job"}
	},
	"POST /api/v1/jobs/:id/cancel": func(w *world) change {
		j := w.job(models.JobQueued)
		return change{as: models.RoleMember, path: fmt.Sprintf("/api/v1/jobs/%d/cancel", j.ID), action: "job.cancelled", object: "job", id: fmt.Sprint(j.ID)}
	},
	"POST /api/v1/jobs/:id/rerun": func(w *world) change {
		j := w.job(models.JobQueued)
		return change{as: models.RoleMember, path: fmt.Sprintf("/api/v1/jobs/%d/rerun", j.ID), action: "job.submitted", object: "job"}
	},
	"POST /api/v1/jobs/:id/hold": func(w *world) change {
		j := w.job(models.JobQueued)
		return change{as: models.RoleMember, path: fmt.Sprintf("/api/v1/jobs/%d/hold", j.ID), action: "job.held", object: "job", id: fmt.Sprint(j.ID)}
	},
	"POST /api/v1/jobs/:id/release": func(w *world) change {
		j := w.job(models.JobHeld)
		return change{as: models.RoleMember, path: fmt.Sprintf("/api/v1/jobs/%d/release", j.ID), action: "job.released", object: "job", id: fmt.Sprint(j.ID)}
	},
	"POST /api/v1/nodes/:name/state": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/api/v1/nodes/" + n.Name + "/state", json: `{"state": "cordoned", "reason": "fan"}`,
			action: "node.cordoned", object: "node", id: n.Name}
	},
	"POST /api/v1/nodes/:name/revoke": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/api/v1/nodes/" + n.Name + "/revoke", action: "node.credential_revoked", object: "node", id: n.Name}
	},
	"POST /api/v1/nodes/:name/remove": func(w *world) change {
		n := w.node()
		return change{as: models.RoleAdmin, path: "/api/v1/nodes/" + n.Name + "/remove", json: `{"reason": "decommissioned"}`, action: "node.removed", object: "node", id: n.Name}
	},
}

// world is the matrix's world with makers of what changes need.
type world struct {
	*matrix
	ctx context.Context
	n   int
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) unique() string {
	w.n++
	return fmt.Sprint(w.n)
}

func (w *world) user(name string) *models.User {
	u := &models.User{Username: name + "-" + w.unique()}
	w.must(w.st.CreateUser(w.ctx, u))
	return u
}

func (w *world) userWithPassword(name string) (*models.User, string) {
	u := w.user(name)
	password, err := w.id.ResetPassword(w.ctx, u.Username)
	w.must(err)
	return u, password
}

func (w *world) team() *models.Team {
	tm := &models.Team{Name: "team-" + w.unique()}
	w.must(w.st.CreateTeam(w.ctx, tm))
	return tm
}

func (w *world) project() *models.Project {
	p := &models.Project{TeamID: w.team().ID, Name: "proj-" + w.unique()}
	w.must(w.st.CreateProject(w.ctx, p))
	return p
}

func (w *world) job(state string) *models.Job {
	j := &models.Job{Name: "job-" + w.unique(), ProjectID: w.projects[true].ID, UserID: w.users[models.RoleMember].ID, Command: `["true"]`, Env: "{}",
		Replicas: 1, Kind: "batch", PriorityClass: "research"}
	w.must(w.st.CreateJob(w.ctx, j, "test"))
	if state != models.JobQueued {
		w.must(w.st.TransitionJob(w.ctx, j.ID, store.Transition{From: models.JobQueued, To: state, Reason: "test", Actor: "test"}))
	}
	return j
}

func (w *world) node() *models.Node {
	n := &models.Node{Name: "gpu-" + w.unique(), State: models.NodeReady, Runtime: "process", CPUMilli: 1000, MemoryMiB: 1024, Labels: "{}", CredentialHash: "h"}
	w.must(w.st.CreateNode(w.ctx, n, nil))
	return n
}

func (w *world) pool() *models.NodePool {
	p := &models.NodePool{Name: "pool-" + w.unique(), Provider: "static", CapacityType: models.CapacityOnDemand}
	w.must(w.st.CreateNodePool(w.ctx, p))
	return p
}

func (w *world) alert(action string) *models.Alert {
	rules, err := w.st.AlertRules(w.ctx)
	w.must(err)
	a := &models.Alert{RuleID: rules[0].ID, Scope: "team", ScopeID: w.projects[true].TeamID, State: "firing", Fingerprint: "fp-" + w.unique(),
		Evidence: "{}", ActionTaken: action, FiredAt: time.Now().UTC()}
	created, err := w.st.CreateAlertOnce(w.ctx, a)
	w.must(err)
	if !created {
		w.t.Fatal("alert not created")
	}
	return a
}

// template saves a job template of the own project as the user of role.
func (w *world) template(role string) *models.JobTemplate {
	t := &models.JobTemplate{ProjectID: w.projects[true].ID, Name: "tpl-" + w.unique(), Spec: `{"project": "", "name": "train", "command": ["true"], "resources": {"gpus": 0}}`,
		CreatedByID: w.users[role].ID}
	w.must(w.st.CreateJobTemplate(w.ctx, t))
	return t
}

func (w *world) budget() *models.Budget {
	b := &models.Budget{ProjectID: &w.project().ID, AmountMicros: 100_000_000, Thresholds: "[50]"}
	w.must(w.st.CreateBudget(w.ctx, b))
	return b
}

func (w *world) image() *models.Image {
	img := &models.Image{Name: "img-" + w.unique(), Reference: "nvcr.io/nvidia/pytorch:24.10-py3", Framework: "pytorch", Status: "draft"}
	w.must(w.st.CreateImage(w.ctx, img))
	return img
}

func (w *world) feedback() *models.FeedbackItem {
	it := &models.FeedbackItem{UserID: w.users[models.RoleMember].ID, Category: "idea", Title: "Idea " + w.unique(), Status: "open"}
	w.must(w.st.CreateFeedbackItem(w.ctx, it))
	return it
}

func (w *world) ruleForm(name string) url.Values {
	return url.Values{"name": {name}, "metric": {"job_idle_minutes"}, "threshold": {"30"}, "action": {"notify"}, "enabled": {"on"}}
}

// send makes ch's request as its role: a page with a session and its CSRF token, the API
// with a write-scoped token, an anonymous form with the login page's double-submit token.
func (w *world) send(method string, ch change) (*http.Response, string) {
	body, ctype := ch.form.Encode(), "application/x-www-form-urlencoded"
	if ch.json != "" {
		body, ctype = ch.json, "application/json"
	}
	req, err := http.NewRequest(method, w.srv.URL+ch.path, strings.NewReader(body))
	w.must(err)
	req.Header.Set("Content-Type", ctype)
	switch {
	case ch.as == anonymous:
		req.AddCookie(&http.Cookie{Name: handlers.LoginCSRFCookie, Value: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
		req.Header.Set("X-CSRF-Token", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	case strings.HasPrefix(ch.path, "/api/"):
		secret, _, err := w.id.CreateToken(w.ctx, w.users[ch.as], "audit", identity.ScopeWrite, 24*time.Hour)
		w.must(err)
		req.Header.Set("Authorization", "Bearer "+secret)
	default:
		cookie, sess, err := w.id.StartSession(w.ctx, w.users[ch.as], "", "audit")
		w.must(err)
		req.AddCookie(&http.Cookie{Name: handlers.SessionCookie, Value: cookie})
		req.Header.Set("X-CSRF-Token", sess.CSRFToken)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	res, err := client.Do(req)
	w.must(err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// lastEventID is the id of the newest audit event.
func (w *world) lastEventID() int64 {
	page, err := w.st.AuditEventsBefore(w.ctx, store.AuditFilter{}, 0, 1)
	w.must(err)
	if len(page) == 0 {
		return 0
	}
	return page[0].ID
}

// refusals are requests that the gate lets through (any signed-in user may ask) but
// whose handler refuses the caller: each is answered 403 and audited.
var refusals = map[string]func(w *world) change{
	"GET /jobs/new": func(w *world) change {
		path := fmt.Sprintf("/jobs/new?clone=%d", w.jobs[false].ID)
		return change{as: models.RoleMember, path: path, action: "access.denied", object: "route", id: "GET /jobs/new"}
	},
	// A member may change only the templates they saved.
	"POST /projects/:project/templates/:name/delete": func(w *world) change {
		path := "/projects/" + w.projects[true].Name + "/templates/" + w.template(models.RoleTeamLead).Name + "/delete"
		return change{as: models.RoleMember, path: path, action: "access.denied", object: "route", id: "POST " + path}
	},
	"DELETE /api/v1/projects/:project/templates/:name": func(w *world) change {
		path := "/api/v1/projects/" + w.projects[true].Name + "/templates/" + w.template(models.RoleTeamLead).Name
		return change{as: models.RoleMember, path: path, action: "access.denied", object: "route", id: "DELETE " + path}
	},
	"POST /alerts/:id/acknowledge": func(w *world) change { return w.refusedAlert("acknowledge") },
	"POST /alerts/:id/silence":     func(w *world) change { return w.refusedAlert("silence") },
	"POST /alerts/:id/resolve":     func(w *world) change { return w.refusedAlert("resolve") },
	"POST /alerts/:id/revert":      func(w *world) change { return w.refusedAlert("revert") },
}

// refusedAlert is a member's attempt to handle an alert about their team, which only
// its leads and admins handle.
func (w *world) refusedAlert(verb string) change {
	path := fmt.Sprintf("/alerts/%d/%s", w.alert("").ID, verb)
	return change{as: models.RoleMember, path: path, form: url.Values{"for": {"1h"}}, action: "access.denied", object: "route", id: "POST " + path}
}

// changesNothing are the POST routes that change no state: the submit form's live
// requests, posted so that nothing typed goes in a URL. Each must answer and append no
// audit event, and leave the jobs and templates as they were.
var changesNothing = map[string]func(w *world) change{
	"POST /jobs/new": func(w *world) change {
		return change{as: models.RoleMember, path: "/jobs/new", form: url.Values{"project": {w.projects[true].Name}, "name": {"train-1"}, "command": {"python train.py"},
			"preset": {"cpu"}, "apply": {"preset"}, "template_name": {"nightly"}}}
	},
}

// TestEveryMutationIsAudited makes one real change through every state-changing route
// (but the agent protocol's and the job token's, whose audit rule docs/ARCHITECTURE.md
// gives) and checks that it appended an audit event naming the actor, the action and the
// object; and that a handler's own refusals are audited as the gate's are (the route
// matrix checks those). A state-changing route without a case in mutations fails it.
func TestEveryMutationIsAudited(t *testing.T) {
	t.Parallel()
	w := &world{matrix: newMatrix(t), ctx: context.Background()}
	served := map[string]bool{}
	for _, r := range routes(handlers.New(w.st, "test", nil, handlers.Services{})) {
		key := r.method + " " + r.path
		served[key] = true
		if safeMethod(r.method) || r.access.kind == agent || r.access.kind == jobToken {
			continue
		}
		if make, ok := changesNothing[key]; ok {
			w.checkNothing(t, key, r.method, make(w))
			continue
		}
		make, ok := mutations[key]
		if !ok {
			t.Errorf("%s changes state but TestEveryMutationIsAudited has no case for it: add one to mutations, and audit the change in its service", key)
			continue
		}
		w.check(t, key, r.method, make(w), false)
	}
	for key, make := range refusals {
		if !served[key] {
			t.Errorf("refusals has a case for %s, which is no route", key)
			continue
		}
		method, _, _ := strings.Cut(key, " ")
		w.check(t, key, method, make(w), true)
	}
}

// check sends ch and looks for its event among those it appended: a change must
// succeed, a refusal must be answered 403.
func (w *world) check(t *testing.T, key, method string, ch change, refused bool) {
	t.Helper()
	actor := ch.as
	if u := w.users[ch.as]; u != nil {
		actor = u.Username
	} else if ch.as == anonymous {
		actor = ch.id // a login is recorded as done by the user who signed in
	}
	before := w.lastEventID()
	res, body := w.send(method, ch)
	switch {
	case refused && res.StatusCode != http.StatusForbidden:
		t.Errorf("%s as %s: %d, want 403", key, ch.as, res.StatusCode)
		return
	case !refused && res.StatusCode >= 400:
		t.Errorf("%s as %s: %d, want the change made: %.300s", key, ch.as, res.StatusCode, body)
		return
	}
	events, err := w.st.AuditEventsAfter(w.ctx, store.AuditFilter{}, before, 100)
	w.must(err)
	var got []string
	for _, e := range events {
		if e.Action == ch.action && e.Actor == actor && e.ObjectType == ch.object && e.ObjectID != "" && (ch.id == "" || e.ObjectID == ch.id) {
			return
		}
		got = append(got, fmt.Sprintf("%s by %s on %s %s", e.Action, e.Actor, e.ObjectType, e.ObjectID))
	}
	t.Errorf("%s as %s appended %v, want %s by %s on %s %s", key, ch.as, got, ch.action, actor, ch.object, ch.id)
}

// checkNothing sends ch and checks that it was answered, appended no audit event and
// stored no job or template.
func (w *world) checkNothing(t *testing.T, key, method string, ch change) {
	t.Helper()
	count := func() int {
		jobs, err := w.st.Jobs(w.ctx, store.JobFilter{})
		w.must(err)
		templates, err := w.st.JobTemplates(w.ctx, w.projects[true].ID)
		w.must(err)
		return len(jobs) + len(templates)
	}
	before, rows := w.lastEventID(), count()
	if res, body := w.send(method, ch); res.StatusCode != http.StatusOK {
		t.Errorf("%s as %s: %d, want 200: %.300s", key, ch.as, res.StatusCode, body)
	}
	if after := w.lastEventID(); after != before {
		t.Errorf("%s as %s appended audit events, but is to change nothing", key, ch.as)
	}
	if count() != rows {
		t.Errorf("%s as %s stored a job or template", key, ch.as)
	}
}

// Every state-changing route refuses a browser session (or, for the login form, a
// visitor) that does not send the CSRF token: 403, audited, before any handler runs.
// API tokens need none: no browser sends them.
func TestEveryStateChangeNeedsTheCSRFToken(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	ctx := context.Background()
	for _, r := range routes(handlers.New(m.st, "test", nil, handlers.Services{})) {
		if safeMethod(r.method) || r.access.kind == agent || r.access.kind == jobToken {
			continue
		}
		req, err := http.NewRequest(r.method, m.srv.URL+m.fill(r.path, true), strings.NewReader(url.Values{"confirm": {"yes"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if r.access.kind != public {
			cookie, _, err := m.id.StartSession(ctx, m.users[models.RoleAdmin], "", "csrf")
			if err != nil {
				t.Fatal(err)
			}
			req.AddCookie(&http.Cookie{Name: handlers.SessionCookie, Value: cookie})
		}
		before := m.denials()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "security token is missing") || m.denials() != before+1 {
			t.Errorf("%s %s without the CSRF token: %d %.200s, want 403 and an audited refusal", r.method, r.path, res.StatusCode, b)
		}
	}
}

// badValues are what a careless or hostile client puts in a field.
var badValues = []string{"", "x", "-1", "99999999999999999999", "0.5e400", strings.Repeat("a", 3000), "a\x00b\xff"}

// Bad input to a state-changing route is a 4xx, never a 500, and the API's 400s name
// the field: every field of each route's valid change (see mutations) in turn gets each
// bad value, and every number in its path gets one that is no id.
func TestBadInputIsNeverA500(t *testing.T) {
	t.Parallel()
	w := &world{matrix: newMatrix(t), ctx: context.Background()}
	number := regexp.MustCompile(`/[0-9]+(/|$)`)
	sent := 0
	for _, r := range routes(handlers.New(w.st, "test", nil, handlers.Services{})) {
		key := r.method + " " + r.path
		make, ok := mutations[key]
		if !ok {
			continue // TestEveryMutationIsAudited names it
		}
		ch := make(w)
		var tries []change
		for field := range ch.form {
			for _, v := range badValues {
				bad := ch
				bad.form = url.Values{}
				for k, vs := range ch.form {
					bad.form[k] = vs
				}
				bad.form.Set(field, v)
				tries = append(tries, bad)
			}
		}
		if ch.json != "" {
			var body map[string]any
			w.must(json.Unmarshal([]byte(ch.json), &body))
			for field := range body {
				for _, v := range []any{nil, "x", -1, 1e300, []int{1}, map[string]int{"a": 1}} {
					bad := map[string]any{}
					for k, x := range body {
						bad[k] = x
					}
					bad[field] = v
					b, _ := json.Marshal(bad)
					tries = append(tries, change{as: ch.as, path: ch.path, json: string(b)})
				}
			}
			tries = append(tries, change{as: ch.as, path: ch.path, json: `{"oops`})
		}
		for _, id := range []string{"abc", "0", "99999999999999999999"} {
			if p := number.ReplaceAllString(ch.path, "/"+id+"$1"); p != ch.path {
				bad := ch
				bad.path = p
				tries = append(tries, bad)
			}
		}
		for _, bad := range tries {
			sent++
			res, body := w.send(r.method, bad)
			if res.StatusCode >= 500 {
				t.Errorf("%s as %s, path %s, form %v, body %.100s: %d %.200s", key, bad.as, bad.path, bad.form, bad.json, res.StatusCode, body)
			}
			// The API says which field is at fault.
			var e struct{ Error handlers.APIError }
			if res.StatusCode == http.StatusBadRequest && strings.HasPrefix(bad.path, "/api/") && (json.Unmarshal([]byte(body), &e) != nil || e.Error.Field == "" || e.Error.Message == "") {
				t.Errorf("%s, body %.100s: 400 %.200s, want the error to name the field", key, bad.json, body)
			}
		}
	}
	t.Logf("%d bad requests sent", sent)
}
