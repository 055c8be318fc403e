package web

import (
	"fmt"

	"github.com/gantry-gpu/gantry/services/authz"
)

// Access is the rule of one route: who may call it. Every route in the table carries one,
// and the zero Access refuses everyone, so a route added without a rule is closed.
type Access struct {
	kind    accessKind
	object  authz.Object
	action  authz.Action
	project projectSource
	// formCut: a form over the body bound goes to the handler cut at the bound (cutForm).
	formCut bool
}

type accessKind int

const (
	noRule   accessKind = iota // refuses everyone: the route forgot its rule
	public                     // anyone, signed in or not (login, health, the OIDC callback)
	agent                      // node agents: no session or CSRF; the handler checks the node credential or join token
	jobToken                   // a running job: no session or CSRF; the handler checks its job token
	scrape                     // Prometheus: anyone, or only the bearer of the metrics token when one is set
	signedIn                   // any signed-in user; the handler shows only what the user may see
	platform                   // a platform-wide permission, e.g. reading the audit log
	project                    // a permission in the project the request is about
)

// projectSource says where a project route finds its project.
type projectSource int

const (
	fromPath projectSource = iota + 1 // the :project path parameter (a project name)
	fromBody                          // the "project" field of the JSON body or form (a project name)
	fromJob                           // the project of the job named by the :id path parameter
)

// Public: anyone.
func Public() Access { return Access{kind: public} }

// Agent: the agent protocol, authenticated by the handler: handlers.Agent checks the node
// credential (Authorization: Bearer), the join handler its join token. No session, no CSRF;
// the handler bounds the body.
func Agent() Access { return Access{kind: agent} }

// JobToken: a running job, authenticated by the handler (handlers.Job) with its job
// token (Authorization: Bearer GANTRY_JOB_TOKEN), which speaks for its own job (the :id
// path parameter) and attempt only. No session, no CSRF; bodies are capped as for users.
func JobToken() Access { return Access{kind: jobToken} }

// Scrape: a Prometheus scrape. Anyone, as dcgm-exporter is, unless the server has a
// metrics token (Config.MetricsToken): then only a request with Authorization: Bearer
// <token>; a session or an API token does not stand in for it.
func Scrape() Access { return Access{kind: scrape} }

// SignedIn: any signed-in user, through a session or an API token.
func SignedIn() Access { return Access{kind: signedIn} }

// Global: a platform-wide permission (admin console, audit log).
func Global(obj authz.Object, act authz.Action) Access {
	return Access{kind: platform, object: obj, action: act}
}

// InProject: a permission in the project named by the :project path parameter.
func InProject(obj authz.Object, act authz.Action) Access {
	return Access{kind: project, object: obj, action: act, project: fromPath}
}

// InProjectOfBody: a permission in the project named by the "project" field of the
// JSON body or form.
func InProjectOfBody(obj authz.Object, act authz.Action) Access {
	return Access{kind: project, object: obj, action: act, project: fromBody}
}

// InProjectOfJob: a permission in the project of the job named by the :id path parameter.
func InProjectOfJob(obj authz.Object, act authz.Action) Access {
	return Access{kind: project, object: obj, action: act, project: fromJob}
}

// OrFormCut lets a url-encoded form larger than the body bound through to the handler, read
// as far as the bound, with the field cut off there named (handlers.FormCutKey), for the
// handler to show the form again with that field's error (a command too long for the
// submit form) instead of the gate's page about a form too large.
func (a Access) OrFormCut() Access {
	a.formCut = true
	return a
}

func (a Access) String() string {
	switch a.kind {
	case public:
		return "public"
	case agent:
		return "agent"
	case jobToken:
		return "job-token"
	case scrape:
		return "scrape"
	case signedIn:
		return "signed-in"
	case platform:
		return fmt.Sprintf("global %s:%s", a.object, a.action)
	case project:
		from := map[projectSource]string{fromPath: "path", fromBody: "body", fromJob: "job"}[a.project]
		return fmt.Sprintf("project(%s) %s:%s", from, a.object, a.action)
	}
	return "no rule"
}
