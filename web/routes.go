package web

import (
	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/handlers"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/authz"
)

// route is one line of the route table: every route says who may call it (see access.go).
type route struct {
	method  string
	path    string
	access  Access
	handler gin.HandlerFunc
}

// routes is every route Gantry serves, in one table.
func routes(h *handlers.Handler) []route {
	return []route{
		{"GET", "/healthz", Public(), h.Healthz},
		{"GET", "/readyz", Public(), h.Readyz},
		// Prometheus scrapes without signing in, as it does dcgm-exporter, or with the
		// metrics token where serve has one (--metrics-token).
		{"GET", "/metrics", Scrape(), h.Metrics},
		{"GET", "/", SignedIn(), h.HomeShow},

		{"GET", "/login", Public(), h.LoginShow},
		{"POST", "/login", Public(), h.LoginCreate},
		{"POST", "/logout", SignedIn(), h.SessionDestroy},
		{"GET", "/auth/oidc/login", Public(), h.SSOBegin},
		{"GET", "/auth/oidc/callback", Public(), h.SSOCallback},
		{"GET", "/tokens", SignedIn(), h.TokensIndex},
		{"POST", "/tokens", SignedIn(), h.TokenCreate},
		{"POST", "/tokens/:id/revoke", SignedIn(), h.TokenRevoke},
		// A person's own settings: the route names nobody, so each changes only their own.
		{"GET", "/account", SignedIn(), h.AccountShow},
		{"POST", "/account", SignedIn(), h.AccountUpdate},

		// Cost: the handlers narrow what they show to the projects where the user reads
		// cost; admins and auditors (cost:read platform-wide) see every team.
		{"GET", "/cost", SignedIn(), h.CostShow},
		{"GET", "/cost.csv", SignedIn(), h.CostExport},
		// Usage that no allocation carries (egress, persistent storage), from a meter outside Gantry.
		{"GET", "/api/v1/cost", SignedIn(), h.CostAPIShow},
		{"POST", "/api/v1/usage", Global(authz.Platform, authz.Write), h.UsageCreate},
		// Alerts: the handlers show each user the alerts about their projects, their team's
		// if they lead it, and their jobs; admins and team leads handle them.
		{"GET", "/alerts", SignedIn(), h.AlertsIndex},
		{"GET", "/alerts/:id", SignedIn(), h.AlertShow},
		{"POST", "/alerts/:id/acknowledge", SignedIn(), h.AlertAcknowledge},
		{"POST", "/alerts/:id/silence", SignedIn(), h.AlertSilence},
		{"POST", "/alerts/:id/resolve", SignedIn(), h.AlertResolve},
		{"POST", "/alerts/:id/revert", SignedIn(), h.AlertRevert},
		// Cost settings: auditors read them, admins change them (audited by the services).
		{"GET", "/admin/cost/rates", Global(authz.Platform, authz.Read), h.CostRatesIndex},
		{"POST", "/admin/cost/rates", Global(authz.Platform, authz.Write), h.CostRateCreate},
		{"POST", "/admin/cost/rates/:id/delete", Global(authz.Platform, authz.Write), h.CostRateDelete},
		{"POST", "/admin/cost/currency", Global(authz.Platform, authz.Write), h.CostCurrencyUpdate},
		{"GET", "/admin/cost/budgets", Global(authz.Platform, authz.Read), h.CostBudgetsIndex},
		{"POST", "/admin/cost/budgets", Global(authz.Platform, authz.Write), h.CostBudgetCreate},
		{"POST", "/admin/cost/budgets/:id", Global(authz.Platform, authz.Write), h.CostBudgetUpdate},
		{"POST", "/admin/cost/budgets/:id/delete", Global(authz.Platform, authz.Write), h.CostBudgetDelete},
		{"GET", "/admin/cost/rules", Global(authz.Platform, authz.Read), h.CostRulesIndex},
		{"POST", "/admin/cost/rules", Global(authz.Platform, authz.Write), h.CostRuleCreate},
		{"GET", "/admin/cost/rules/:id", Global(authz.Platform, authz.Read), h.CostRuleShow},
		{"POST", "/admin/cost/rules/:id", Global(authz.Platform, authz.Write), h.CostRuleUpdate},
		{"POST", "/admin/cost/evaluate", Global(authz.Platform, authz.Write), h.CostRulesEvaluate},
		{"GET", "/admin/cost/channels", Global(authz.Platform, authz.Read), h.CostChannelsIndex},
		{"POST", "/admin/cost/channels", Global(authz.Platform, authz.Write), h.CostChannelCreate},
		{"POST", "/admin/cost/channels/:id", Global(authz.Platform, authz.Write), h.CostChannelUpdate},

		{"GET", "/jobs", SignedIn(), h.JobsIndex},
		// The telemetry panel of a job: a page, or the fragment a job page embeds.
		{"GET", "/jobs/:id/telemetry", InProjectOfJob(authz.Jobs, authz.Read), h.JobTelemetry},
		{"GET", "/images", SignedIn(), h.ImagesIndex},
		{"GET", "/api/v1/images", SignedIn(), h.ImagesAPIIndex},
		{"POST", "/api/v1/images", Global(authz.Platform, authz.Write), h.ImageCreateAPI},
		{"POST", "/api/v1/images/:name/status", Global(authz.Platform, authz.Write), h.ImageStatusAPI},
		{"POST", "/admin/images", Global(authz.Platform, authz.Write), h.ImageCreate},
		{"POST", "/admin/images/:name/status", Global(authz.Platform, authz.Write), h.ImageStatusUpdate},
		{"POST", "/admin/images/:name/prepull", Global(authz.Platform, authz.Write), h.ImagePrePullUpdate},

		{"GET", "/feedback", SignedIn(), h.FeedbackIndex},
		{"POST", "/feedback", SignedIn(), h.FeedbackCreate},
		{"GET", "/feedback/:id", SignedIn(), h.FeedbackShow},
		{"POST", "/feedback/:id/vote", SignedIn(), h.FeedbackVote},
		{"POST", "/feedback/:id/comments", SignedIn(), h.FeedbackCommentCreate},
		{"POST", "/feedback/:id/answer", Global(authz.Platform, authz.Write), h.FeedbackAnswer},
		{"GET", "/admin/feedback.csv", Global(authz.Platform, authz.Read), h.FeedbackExport},

		{"GET", "/projects", SignedIn(), h.ProjectsMine},
		{"GET", "/admin", Global(authz.Platform, authz.Read), h.AdminIndex},
		{"GET", "/admin/people", Global(authz.Platform, authz.Read), h.PeopleIndex},
		{"POST", "/admin/people/:user/disable", Global(authz.Platform, authz.Write), h.PersonDisable},
		{"POST", "/admin/people/:user/enable", Global(authz.Platform, authz.Write), h.PersonEnable},
		{"POST", "/admin/people/:user/roles", Global(authz.Platform, authz.Write), h.PersonRolesUpdate},
		{"GET", "/admin/teams", Global(authz.Platform, authz.Read), h.TeamsIndex},
		{"POST", "/admin/teams", Global(authz.Platform, authz.Write), h.TeamCreate},
		{"POST", "/admin/teams/:team/archive", Global(authz.Platform, authz.Write), h.TeamArchive},
		{"POST", "/admin/projects", Global(authz.Platform, authz.Write), h.ProjectCreate},
		{"GET", "/admin/projects/:project", Global(authz.Platform, authz.Read), h.ProjectAdminShow},
		{"POST", "/admin/projects/:project/archive", Global(authz.Platform, authz.Write), h.ProjectArchive},
		{"POST", "/admin/projects/:project/placement", Global(authz.Platform, authz.Write), h.ProjectPlacementUpdate},
		{"POST", "/admin/projects/:project/members", Global(authz.Platform, authz.Write), h.ProjectMemberSave},
		{"POST", "/admin/projects/:project/members/:user/remove", Global(authz.Platform, authz.Write), h.ProjectMemberRemove},
		{"GET", "/admin/groups", Global(authz.Platform, authz.Read), h.GroupMappingsIndex},
		{"POST", "/admin/groups", Global(authz.Platform, authz.Write), h.GroupMappingCreate},
		{"POST", "/admin/groups/:id/delete", Global(authz.Platform, authz.Write), h.GroupMappingDelete},
		{"GET", "/admin/quotas", Global(authz.Platform, authz.Read), h.QuotasIndex},
		{"POST", "/admin/quotas", Global(authz.Platform, authz.Write), h.QuotaSave},
		{"POST", "/admin/quotas/:id/delete", Global(authz.Platform, authz.Write), h.QuotaDelete},
		{"GET", "/admin/nodes", Global(authz.Platform, authz.Read), h.NodesAdminIndex},
		{"GET", "/admin/nodes/:name", Global(authz.Platform, authz.Read), h.NodeAdminShow},
		{"POST", "/admin/nodes/:name/state", Global(authz.Platform, authz.Write), h.NodeAdminStateUpdate},
		{"POST", "/admin/nodes/:name/labels", Global(authz.Platform, authz.Write), h.NodeLabelsUpdate},
		{"POST", "/admin/nodes/:name/pool", Global(authz.Platform, authz.Write), h.NodePoolUpdate},
		{"POST", "/admin/nodes/:name/confidential", Global(authz.Platform, authz.Write), h.NodeConfidentialUpdate},
		{"POST", "/admin/nodes/:name/remove", Global(authz.Platform, authz.Write), h.NodeRemove},
		{"GET", "/admin/join-tokens", Global(authz.Platform, authz.Read), h.JoinTokensIndex},
		{"POST", "/admin/join-tokens", Global(authz.Platform, authz.Write), h.JoinTokenCreate},
		{"POST", "/admin/join-tokens/revoke", Global(authz.Platform, authz.Write), h.JoinTokenRevoke},
		{"GET", "/admin/priority-classes", Global(authz.Platform, authz.Read), h.ClassesIndex},
		{"POST", "/admin/priority-classes", Global(authz.Platform, authz.Write), h.ClassSave},
		{"POST", "/admin/priority-classes/:name/delete", Global(authz.Platform, authz.Write), h.ClassDelete},
		{"GET", "/admin/settings", Global(authz.Platform, authz.Read), h.SettingsShow},
		{"POST", "/admin/settings", Global(authz.Platform, authz.Write), h.SettingsUpdate},
		{"GET", "/admin/pools", Global(authz.Platform, authz.Read), h.PoolsIndex},
		{"GET", "/admin/pools/:name", Global(authz.Platform, authz.Read), h.PoolShow},
		{"POST", "/admin/pools/:name/forget-slurm-jobs", Global(authz.Platform, authz.Write), h.PoolSlurmJobsForget},

		{"GET", "/admin/audit", Global(authz.Audit, authz.Read), h.AuditIndex},
		{"GET", "/admin/audit/export", Global(authz.Audit, authz.Read), h.AuditExport},

		// The API's description is no secret: tools read it before they hold a token.
		{"GET", "/api/v1/openapi.json", Public(), h.OpenAPIShow},
		{"GET", "/api/v1/me", SignedIn(), h.MeShow},
		{"GET", "/api/v1/projects/:project/members", InProject(authz.Project, authz.Read), h.MembersIndex},
		{"PUT", "/api/v1/projects/:project/members/:user", InProject(authz.Project, authz.Manage), h.MemberUpdate},
		{"DELETE", "/api/v1/projects/:project/members/:user", InProject(authz.Project, authz.Manage), h.MemberDestroy},

		// The jobs list shows only jobs of projects where the caller reads jobs (all for
		// admins and auditors): the handler narrows it, as the cost page does.
		{"GET", "/api/v1/jobs", SignedIn(), h.JobsAPIIndex},

		// Job pages: the form lists only projects where the user may submit.
		// The cluster view shows every node and team to anyone signed in; admins act on
		// nodes from the admin console.
		{"GET", "/cluster", SignedIn(), h.ClusterShow},
		{"GET", "/jobs/new", SignedIn(), h.JobNew},
		{"POST", "/jobs/new", SignedIn(), h.JobNewRefresh},
		{"POST", "/jobs", InProjectOfBody(authz.Jobs, authz.Write).OrFormCut(), h.JobSubmit},
		{"GET", "/jobs/:id", InProjectOfJob(authz.Jobs, authz.Read), h.JobShowPage},
		{"GET", "/jobs/:id/logs/stream", InProjectOfJob(authz.Jobs, authz.Read), h.JobLogStream},
		{"POST", "/jobs/:id/cancel", InProjectOfJob(authz.Jobs, authz.Write), h.JobCancelPage},
		{"POST", "/jobs/:id/hold", InProjectOfJob(authz.Jobs, authz.Write), h.JobHold},
		{"POST", "/jobs/:id/release", InProjectOfJob(authz.Jobs, authz.Write), h.JobRelease},
		{"POST", "/jobs/:id/rerun", InProjectOfJob(authz.Jobs, authz.Write), h.JobRerun},
		// Job templates, saved forms of a project: those who submit there save them; who
		// saved one, the project's team leads and admins rename and delete it (the
		// service checks which).
		{"POST", "/jobs/templates", InProjectOfBody(authz.Jobs, authz.Write).OrFormCut(), h.JobTemplateSave},
		{"GET", "/projects/:project/templates", InProject(authz.Jobs, authz.Read), h.JobTemplatesIndex},
		{"POST", "/projects/:project/templates/:name/rename", InProject(authz.Jobs, authz.Write), h.JobTemplateRename},
		{"POST", "/projects/:project/templates/:name/delete", InProject(authz.Jobs, authz.Write), h.JobTemplateDelete},
		{"GET", "/api/v1/projects/:project/templates", InProject(authz.Jobs, authz.Read), h.JobTemplatesAPIIndex},
		{"POST", "/api/v1/projects/:project/templates", InProject(authz.Jobs, authz.Write), h.JobTemplateCreate},
		{"GET", "/api/v1/projects/:project/templates/:name", InProject(authz.Jobs, authz.Read), h.JobTemplateAPIShow},
		{"DELETE", "/api/v1/projects/:project/templates/:name", InProject(authz.Jobs, authz.Write), h.JobTemplateDestroy},

		{"POST", "/api/v1/jobs", InProjectOfBody(authz.Jobs, authz.Write), h.JobCreate},
		{"GET", "/api/v1/jobs/:id", InProjectOfJob(authz.Jobs, authz.Read), h.JobShow},
		{"GET", "/api/v1/jobs/:id/logs", InProjectOfJob(authz.Jobs, authz.Read), h.JobLogs},
		{"POST", "/api/v1/jobs/:id/cancel", InProjectOfJob(authz.Jobs, authz.Write), h.JobCancel},
		{"POST", "/api/v1/jobs/:id/rerun", InProjectOfJob(authz.Jobs, authz.Write), h.JobRerunAPI},
		{"POST", "/api/v1/jobs/:id/hold", InProjectOfJob(authz.Jobs, authz.Write), h.JobHoldAPI},
		{"POST", "/api/v1/jobs/:id/release", InProjectOfJob(authz.Jobs, authz.Write), h.JobReleaseAPI},
		// A running job reports its metrics and checkpoints with its own job token.
		{"POST", "/api/v1/jobs/:id/metrics", JobToken(), h.Job(h.JobMetricsCreate)},

		{"GET", "/api/v1/nodes", SignedIn(), h.NodesIndex},
		{"GET", "/api/v1/quotas", SignedIn(), h.QuotasAPIIndex},
		{"POST", "/api/v1/nodes/:name/state", Global(authz.Platform, authz.Write), h.NodeStateUpdate},
		{"POST", "/api/v1/nodes/:name/revoke", Global(authz.Platform, authz.Write), h.NodeRevoke},
		{"POST", "/api/v1/nodes/:name/remove", Global(authz.Platform, authz.Write), h.NodeRemoveAPI},

		// The agent protocol: agents authenticate with their node credential, not as users.
		{"POST", agentapi.PathJoin, Agent(), h.AgentJoin},
		{"POST", agentapi.PathHeartbeat, Agent(), h.Agent(h.AgentHeartbeat)},
		{"GET", agentapi.PathLeases, Agent(), h.Agent(h.AgentLeases)},
		{"POST", agentapi.PathReport, Agent(), h.Agent(h.AgentReport)},
		{"POST", agentapi.PathLogs, Agent(), h.Agent(h.AgentLogs)},
		{"POST", agentapi.PathJobToken, Agent(), h.Agent(h.AgentJobToken)},
	}
}
