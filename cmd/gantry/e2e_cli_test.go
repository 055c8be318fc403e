package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/dispatch"
	"github.com/gantry-gpu/gantry/services/store"
)

// cliUser is a person at a terminal: their own home and config directory.
type cliUser struct {
	t   *testing.T
	env []string
	dir string
}

func newCLIUser(t *testing.T) cliUser {
	home := t.TempDir()
	return cliUser{t: t, dir: home, env: []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}}
}

// run runs the binary as this user with stdin, and returns stdout, stderr and the exit code.
func (u cliUser) run(stdin string, args ...string) (string, string, int) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cleanEnv(), u.env...)
	cmd.Dir = u.dir
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		u.t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// ok runs a command that must succeed and returns its stdout.
func (u cliUser) ok(args ...string) string {
	u.t.Helper()
	out, stderr, code := u.run("", args...)
	if code != 0 {
		u.t.Fatalf("gantry %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return out
}

// jobJSON runs a command with -o json (before any --) that answers one job.
func (u cliUser) jobJSON(args ...string) cliJob {
	u.t.Helper()
	var j cliJob
	at := len(args)
	for i, a := range args {
		if a == "--" {
			at = i
			break
		}
	}
	out := u.ok(append(append(args[:at:at], "-o", "json"), args[at:]...)...)
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		u.t.Fatalf("gantry %s -o json: %v in %s", strings.Join(args, " "), err, out)
	}
	return j
}

// The CLI against a real server, as a user would: log in, submit from job.yaml and
// from flags, follow the logs, list, show, cancel, look at images and nodes, in every
// output format; bad input gets one line naming what is wrong.
func TestCLIAgainstARealServer(t *testing.T) {
	dir := t.TempDir()
	url, _ := serveFor(t, dir, "--heartbeat-interval", "300ms")
	token := apiToken(t, dir)
	u := newCLIUser(t)

	if _, stderr, code := u.run("", "job", "ls"); code != 1 || !strings.Contains(stderr, "not signed in: run gantry login") {
		t.Fatalf("job ls before login: exit %d %q", code, stderr)
	}
	if _, stderr, code := u.run("gty_not-a-token\n", "login", "--server", url); code != 1 || !strings.Contains(stderr, "check the token with "+url) {
		t.Fatalf("login with a bad token: exit %d %q", code, stderr)
	}
	if _, stderr, code := u.run(token+"\n", "login", "--server", "gantry.example.com"); code != 2 || !strings.Contains(stderr, `--server "gantry.example.com": want the server's URL`) {
		t.Fatalf("login to a server without scheme: exit %d %q", code, stderr)
	}
	out, stderr, code := u.run(token+"\n", "login", "--server", url+"/")
	if code != 0 || !strings.Contains(out, "Signed in to "+url+" as admin") {
		t.Fatalf("login: exit %d %q %q", code, out, stderr)
	}
	cfg := filepath.Join(u.dir, ".config", "gantry", "cli.yaml")
	info, err := os.Stat(cfg)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("config %s: %v, mode %v; want 0600", cfg, err, info.Mode())
	}
	if out, stderr, code := u.run("", "quotas", "ls"); code != 0 || !strings.HasPrefix(out, "TEAM") || !strings.Contains(stderr, "No team has a quota, and no team's jobs hold GPUs now") {
		t.Errorf("quotas ls of a new server: exit %d %q %q", code, out, stderr)
	}
	if _, stderr, _ := u.run("", "quotas", "ls", "--team", "default"); !strings.Contains(stderr, "Team default has no quota, and its jobs hold no GPUs now") {
		t.Errorf("quotas ls --team default of a new server: %q", stderr)
	}
	var saved cliConfig
	b, _ := os.ReadFile(cfg)
	if err := yaml.Unmarshal(b, &saved); err != nil || saved.Server != url || saved.Token != token {
		t.Fatalf("config holds %q, %v", b, err)
	}

	jobYAML := filepath.Join(u.dir, "job.yaml")
	os.WriteFile(jobYAML, []byte(`project: default
name: hello
command: [/bin/sh, -c, "echo hi from $GANTRY_JOB_ID; sleep 0.5; echo bye"]
env: {GREETING: hi}
resources: {gpus: 1, cpu_milli: 500, memory_mib: 512}
`), 0o600)
	if out := u.ok("job", "submit", "-f", jobYAML); !strings.HasPrefix(out, "Submitted job ") || !strings.Contains(out, "gantry job logs -f") {
		t.Fatalf("submit: %q", out)
	}
	hello := u.jobJSON("job", "submit", "-f", jobYAML, "--name", "hello-2")
	if hello.Name != "hello-2" || hello.State != "queued" || hello.Resources.GPUs != 1 || hello.User != "admin" {
		t.Fatalf("submit with an override = %+v", hello)
	}
	if logs := u.ok("job", "logs", "-f", strconv.FormatInt(hello.ID, 10)); logs != "hi from "+strconv.FormatInt(hello.ID, 10)+"\nbye\n" {
		t.Fatalf("logs -f = %q", logs)
	}
	done := u.jobJSON("job", "get", strconv.FormatInt(hello.ID, 10))
	if done.State != "succeeded" || done.ExitCode == nil || *done.ExitCode != 0 || len(done.Events) < 4 {
		t.Fatalf("after logs -f ended: %+v", done)
	}
	if out := u.ok("job", "get", strconv.FormatInt(hello.ID, 10)); !strings.Contains(out, "State:") || !strings.Contains(out, "running → succeeded") {
		t.Fatalf("get as a table: %s", out)
	}
	var asYAML struct {
		ID    int64  `yaml:"id"`
		State string `yaml:"state"`
	}
	if err := yaml.Unmarshal([]byte(u.ok("job", "get", strconv.FormatInt(hello.ID, 10), "-o", "yaml")), &asYAML); err != nil || asYAML.ID != hello.ID || asYAML.State != "succeeded" {
		t.Fatalf("get -o yaml: %+v %v", asYAML, err)
	}

	sleeper := u.jobJSON("job", "submit", "--project", "default", "--name", "sleeper", "--gpus", "0", "--env", "A=1", "--", "sleep", "30")
	if sleeper.Command[0] != "sleep" || sleeper.Resources.GPUs != 0 {
		t.Fatalf("submit from flags = %+v", sleeper)
	}
	ls := u.ok("job", "ls")
	lines := strings.Split(strings.TrimSpace(ls), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "sleeper") || !strings.Contains(lines[2], "hello-2") {
		t.Fatalf("job ls:\n%s", ls)
	}
	var page struct {
		Jobs []struct {
			ID int64 `json:"id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(u.ok("job", "ls", "--state", "succeeded", "--sort", "name", "-o", "json")), &page); err != nil || len(page.Jobs) != 2 || page.Jobs[1].ID != hello.ID {
		t.Fatalf("ls --state succeeded --sort name: %+v %v", page, err)
	}
	out, stderr, _ = u.run("", "job", "ls", "--limit", "1")
	if !strings.Contains(stderr, "More jobs: add --cursor ") || strings.Count(out, "\n") != 2 {
		t.Fatalf("a page of one: %q %q", out, stderr)
	}
	if out := u.ok("job", "cancel", strconv.FormatInt(sleeper.ID, 10)); !strings.Contains(out, "sleeper") {
		t.Fatalf("cancel: %q", out)
	}
	if _, stderr, code := u.run("", "job", "cancel", strconv.FormatInt(hello.ID, 10)); code != 1 || !strings.Contains(stderr, "already ended") {
		t.Fatalf("cancel a finished job: exit %d %q", code, stderr)
	}
	// A finished job runs again as it was: a new job that says which it re-ran.
	again := u.ok("job", "rerun", strconv.FormatInt(hello.ID, 10))
	m := regexp.MustCompile(`^Job (\d+) \(hello-2\), a re-run of job ` + strconv.FormatInt(hello.ID, 10) + `, is (queued|scheduled|running|succeeded)\.\n$`).FindStringSubmatch(again)
	if m == nil || m[1] == strconv.FormatInt(hello.ID, 10) {
		t.Fatalf("rerun: %q", again)
	}
	if rerun := u.jobJSON("job", "get", m[1]); rerun.RerunOf == nil || *rerun.RerunOf != hello.ID || rerun.Command[0] != hello.Command[0] {
		t.Fatalf("the re-run = %+v", rerun)
	}
	if _, stderr, code := u.run("", "job", "rerun", "999999"); code != 1 || !strings.Contains(stderr, "there is no job 999999") {
		t.Fatalf("rerun a missing job: exit %d %q", code, stderr)
	}
	if out := u.ok("images", "ls"); !strings.Contains(out, "plain-command") || !strings.HasPrefix(out, "NAME") {
		t.Fatalf("images ls: %q", out)
	}
	// An admin registers an image and certifies it, as an image pipeline would.
	if out := u.ok("images", "add", "jax-0.4-cuda12", "--reference", "ghcr.io/acme/jax:0.4.30", "--framework", "jax", "--cuda-version", "12.4"); out != "Added jax-0.4-cuda12 (uncertified). Certify it with: gantry images certify jax-0.4-cuda12\n" {
		t.Errorf("images add: %q", out)
	}
	if _, stderr, code := u.run("", "images", "add", "jax-0.4-cuda12", "--reference", "ghcr.io/acme/jax:0.4.30", "--framework", "jax"); code != 1 || !strings.Contains(stderr, `an image called "jax-0.4-cuda12" exists already`) {
		t.Errorf("images add twice: exit %d %q", code, stderr)
	}
	if out := u.ok("images", "certify", "jax-0.4-cuda12"); out != "jax-0.4-cuda12 is now certified.\n" {
		t.Errorf("images certify: %q", out)
	}
	if out := u.ok("images", "ls", "--framework", "jax"); !regexp.MustCompile(`jax-0\.4-cuda12 +jax +12\.4 +certified +ghcr\.io/acme/jax:0\.4\.30`).MatchString(out) {
		t.Errorf("images ls after the certification: %q", out)
	}
	if _, stderr, code := u.run("", "images", "deprecate", "no-such-image"); code != 1 || !strings.Contains(stderr, `no image called "no-such-image"`) {
		t.Errorf("images deprecate of a missing image: exit %d %q", code, stderr)
	}
	// Every list in both of the API's formats.
	for _, args := range [][]string{{"images", "ls"}, {"nodes", "ls"}, {"job", "ls"}, {"quotas", "ls"}} {
		var asJSON, asYAML map[string]any
		if err := json.Unmarshal([]byte(u.ok(append(args, "-o", "json")...)), &asJSON); err != nil || len(asJSON) == 0 {
			t.Errorf("%s -o json: %v %v", strings.Join(args, " "), asJSON, err)
		}
		if err := yaml.Unmarshal([]byte(u.ok(append(args, "-o", "yaml")...)), &asYAML); err != nil || len(asYAML) == 0 {
			t.Errorf("%s -o yaml: %v %v", strings.Join(args, " "), asYAML, err)
		}
		for k := range asJSON {
			if _, ok := asYAML[k]; !ok {
				t.Errorf("%s -o yaml lacks %s, which -o json has", strings.Join(args, " "), k)
			}
		}
	}
	if out := u.ok("nodes", "ls"); !strings.Contains(out, "SIMULATED") || !strings.Contains(out, "-local") {
		t.Fatalf("nodes ls: %q", out)
	}
	if out := u.ok("nodes", "ls", "--state", "ready,lost", "--name", "LOCAL"); !strings.Contains(out, "-local") {
		t.Errorf("nodes ls --state ready,lost --name LOCAL: %q", out)
	}
	if out := u.ok("nodes", "ls", "--state", "lost"); strings.Contains(out, "-local") || !strings.HasPrefix(out, "NAME") {
		t.Errorf("nodes ls --state lost lists the ready node: %q", out)
	}
	if _, stderr, code := u.run("", "nodes", "ls", "--state", "asleep"); code != 1 || !strings.Contains(stderr, `"asleep" is not a node state`) {
		t.Errorf("nodes ls --state asleep: exit %d %q", code, stderr)
	}
	if _, stderr, code := u.run("", "nodes", "ls", "--pool", "nowhere"); code != 1 || !strings.Contains(stderr, `there is no pool "nowhere"`) {
		t.Errorf("nodes ls --pool nowhere: exit %d %q", code, stderr)
	}
	var nodes struct {
		Nodes []struct {
			Name      string
			Simulated bool
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(u.ok("nodes", "ls", "-o", "json")), &nodes); err != nil || len(nodes.Nodes) != 1 || !nodes.Nodes[0].Simulated {
		t.Fatalf("nodes ls -o json: %+v %v", nodes, err)
	}
	// An admin drains the node for a while and returns it to service.
	local := nodes.Nodes[0].Name
	if _, stderr, code := u.run("", "nodes", "drain", local); code != 2 || !strings.Contains(stderr, "--for: say how long running jobs may go on") {
		t.Errorf("nodes drain without --for: exit %d %q", code, stderr)
	}
	if out := u.ok("nodes", "drain", local, "--for", "2h", "--reason", "kernel update"); !regexp.MustCompile(
		`^Node ` + local + `: draining; running jobs are checkpoint-stopped at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC if still running \(kernel update\)\.\n$`).MatchString(out) {
		t.Errorf("nodes drain: %q", out)
	}
	if out := u.ok("nodes", "ls", "--state", "draining"); !strings.Contains(out, local+"  draining") {
		t.Errorf("nodes ls after the drain: %q", out)
	}
	if out := u.ok("nodes", "ready", local); out != "Node "+local+": ready.\n" {
		t.Errorf("nodes ready: %q", out)
	}
	if _, stderr, code := u.run("", "nodes", "cordon", "no-such-node"); code != 1 || !strings.Contains(stderr, "there is no node no-such-node") {
		t.Errorf("nodes cordon of a missing node: exit %d %q", code, stderr)
	}
	// Before any rate is set, every amount is nothing, and the CLI says why.
	if out, stderr, code := u.run("", "cost", "show"); code != 0 || !strings.Contains(out, "0.000000") || !strings.Contains(stderr, "No cost rates are set, so nothing is charged") {
		t.Errorf("cost show without rates: exit %d %q %q", code, out, stderr)
	}
	// A removed node is listed only with --removed, labelled with the day it was removed.
	st, err := store.Open(t.Context(), store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	removedAt := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	err = st.CreateNode(t.Context(), &models.Node{Name: "old-box", State: models.NodeDown, Runtime: "process", RemovedAt: &removedAt}, nil)
	if err == nil {
		err = st.CreateNode(t.Context(), &models.Node{Name: "spare-box", State: models.NodeCordoned, Runtime: "process"}, nil)
	}
	if err == nil {
		var team *models.Team
		if team, err = st.TeamByName(t.Context(), "default"); err == nil {
			err = st.SaveQuota(t.Context(), &models.Quota{TeamID: team.ID, GPUModel: "A100-80GB",
				QuotaLimits: models.QuotaLimits{Cohort: "lab", NominalMilli: 2500, CPUMilli: 8000}})
		}
	}
	if err == nil {
		// Straight into the table: the server has metered up to now, and a rate set through
		// accounting may not start in the past.
		err = st.CreateCostRate(t.Context(), &models.CostRate{Resource: models.ResourceEgress, Unit: accounting.UnitGiB, RateMicros: 250_000,
			EffectiveFrom: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	}
	if err == nil {
		// As the leader does past --job-log-retention: job logs then says why there is none.
		_, err = st.DeleteJobOutput(t.Context(), []store.EndedJob{{ID: hello.ID, Attempt: 1, State: models.JobSucceeded}}, dispatch.ReasonLogRetention,
			"output deleted: a job's output is kept 90 days after it ends", "system", func(*store.Store, []store.EndedJob) error { return nil })
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := u.run("", "job", "logs", strconv.FormatInt(hello.ID, 10)); code != 0 || out != "" ||
		!regexp.MustCompile(`^The output of job \d+ was deleted at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: the server keeps a job's output for a while after it ends\.\n$`).MatchString(stderr) {
		t.Fatalf("logs of a job whose output was deleted: exit %d, %q, %q", code, out, stderr)
	}
	if _, stderr, _ := u.run("", "job", "logs", "1"); stderr != "" {
		t.Fatalf("logs of a job whose output is kept said %q", stderr)
	}
	if out := u.ok("quotas", "ls"); !regexp.MustCompile(`(?m)^TEAM +GPU MODEL +COHORT +GPUS IN USE +BORROWED +CPU IN USE +MEMORY IN USE\n` +
		`default +A100-80GB +lab +0 of 2.5 +0 +0 cores of 8 cores +0 GiB, no limit\n$`).MatchString(out) {
		t.Fatalf("quotas ls: %q", out)
	}
	if _, stderr, code := u.run("", "quotas", "ls", "--team", "nobody"); code != 1 || !strings.Contains(stderr, `there is no team "nobody"`) {
		t.Fatalf("quotas ls --team nobody: exit %d %q", code, stderr)
	}
	// The cost a server's ledger holds, through GET /api/v1/cost: 4 GiB of egress (1.00)
	// on the 1st and 8 GiB (2.00) on the 2nd of March.
	for _, day := range []struct{ from, to, bytes string }{{"2026-03-01T10:00:00Z", "2026-03-01T11:00:00Z", "4294967296"}, {"2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z", "8589934592"}} {
		req, err := http.NewRequest("POST", url+"/api/v1/usage", strings.NewReader(
			`{"resource": "egress", "project": "default", "bytes": `+day.bytes+`, "from": "`+day.from+`", "to": "`+day.to+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("record usage: %v %v", res, err)
		}
		res.Body.Close()
	}
	if out, stderr, _ := u.run("", "cost", "show", "--by", "project", "--bucket", "day", "--resource", "egress", "--from", "2026-03-01", "--to", "2026-03-31"); !regexp.MustCompile(
		`^ +DAY +PROJECT +AMOUNT \(USD\)\n +2026-03-01 +default +1\.000000\n +2026-03-02 +default +2\.000000\n +total +3\.000000\n$`).MatchString(out) || stderr != "" {
		t.Fatalf("cost show --by project --bucket day: %q %q", out, stderr)
	}
	var cost struct {
		By          string `json:"by" yaml:"by"`
		TotalMicros int64  `json:"total_micros" yaml:"total_micros"`
		Unit        string `json:"unit" yaml:"unit"`
		Currency    string `json:"currency" yaml:"currency"`
	}
	if err := json.Unmarshal([]byte(u.ok("cost", "show", "--from", "2026-03-01", "--to", "2026-03-01", "--resource", "egress", "-o", "json")), &cost); err != nil ||
		cost.By != "team" || cost.TotalMicros != 1_000_000 || cost.Unit == "" || cost.Currency != "USD" {
		t.Fatalf("cost show -o json: %+v %v", cost, err)
	}
	if err := yaml.Unmarshal([]byte(u.ok("cost", "show", "--by", "", "--from", "2026-03-01", "--to", "2026-03-02", "-o", "yaml")), &cost); err != nil || cost.By != "" || cost.TotalMicros != 3_000_000 {
		t.Fatalf("cost show -o yaml: %+v %v", cost, err)
	}
	if out, stderr, code := u.run("", "nodes", "ls"); code != 0 || strings.Contains(out, "old-box") || !strings.Contains(stderr, "Not shown: 1 removed node; gantry nodes ls --removed lists them.") {
		t.Fatalf("nodes ls with a removed node: exit %d %q %q", code, out, stderr)
	}
	if out := u.ok("nodes", "ls", "--removed"); !regexp.MustCompile(`old-box +removed 2026-11-02 `).MatchString(out) || !strings.Contains(out, "-local") {
		t.Fatalf("nodes ls --removed: %q", out)
	}
	// An admin removes a node for good; it is gone from the list, and not removed twice.
	if out := u.ok("nodes", "remove", "spare-box", "--reason", "decommissioned"); out != "Removed node spare-box: its agent is refused from now on.\n" {
		t.Errorf("nodes remove: %q", out)
	}
	if out, stderr, _ := u.run("", "nodes", "ls"); strings.Contains(out, "spare-box") || !strings.Contains(stderr, "Not shown: 2 removed nodes") {
		t.Errorf("nodes ls after the removal: %q %q", out, stderr)
	}
	if _, stderr, code := u.run("", "nodes", "remove", "spare-box"); code != 1 || !strings.Contains(stderr, "node spare-box was removed on ") {
		t.Errorf("nodes remove again: exit %d %q", code, stderr)
	}
	if out := u.ok("audit", "export", "--data-dir", dir, "--action", "node.removed"); !strings.Contains(out, "removed by admin: decommissioned") {
		t.Errorf("the audit log of the removal: %q", out)
	}

	// A template saved through the API starts a job; the flags override it.
	req, err := http.NewRequest("POST", url+"/api/v1/projects/default/templates", strings.NewReader(
		`{"name": "nightly", "spec": {"name": "nightly", "command": ["/bin/sh", "-c", "echo $B"], "env": {"A": "1"}, "resources": {"gpus": 0, "cpu_milli": 250, "memory_mib": 256}, "max_retries": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("save a template: %v %v", res, err)
	}
	res.Body.Close()
	nightly := u.jobJSON("job", "submit", "--project", "default", "--template", "nightly", "--name", "nightly-7", "--env", "B=2")
	if nightly.Name != "nightly-7" || strings.Join(nightly.Command, " ") != "/bin/sh -c echo $B" || nightly.Resources.CPUMilli != 250 || nightly.Resources.MemoryMiB != 256 {
		t.Fatalf("submit --template = %+v", nightly)
	}
	if logs := u.ok("job", "logs", "-f", strconv.FormatInt(nightly.ID, 10)); logs != "2\n" {
		t.Fatalf("the job from the template printed %q, want its --env", logs)
	}

	badYAML := filepath.Join(u.dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("project: [default\n"), 0o600)
	unknown := filepath.Join(u.dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("project: default\nname: x\ncommand: [/bin/true]\ngpu: 1\n"), 0o600)
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"bad output":            {[]string{"job", "ls", "-o", "xml"}, 2, `-o "xml": want table, json or yaml`},
		"cost by a colour":      {[]string{"cost", "show", "--by", "colour"}, 1, `by: "colour" is not one of team, project`},
		"cost from no day":      {[]string{"cost", "show", "--from", "March"}, 1, "from: "},
		"unknown state":         {[]string{"job", "ls", "--state", "bogus"}, 1, `state: "bogus" is not a job state`},
		"bad cursor":            {[]string{"job", "ls", "--cursor", "nope"}, 1, "cursor: is not a cursor of this list"},
		"not an ID":             {[]string{"job", "get", "abc"}, 2, `job ID "abc": want a positive number`},
		"no such job":           {[]string{"job", "get", "999"}, 1, "id: there is no job 999"},
		"stray argument":        {[]string{"job", "ls", "extra"}, 2, `unexpected argument "extra"`},
		"YAML syntax":           {[]string{"job", "submit", "-f", badYAML}, 2, "is not valid YAML"},
		"unknown field":         {[]string{"job", "submit", "-f", unknown}, 1, "gpu:"},
		"negative GPUs":         {[]string{"job", "submit", "-f", jobYAML, "--gpus", "-1"}, 1, "resources.gpus: "},
		"env without =":         {[]string{"job", "submit", "-f", jobYAML, "--env", "NOVALUE"}, 2, `--env "NOVALUE": want NAME=VALUE`},
		"GPUs not a number":     {[]string{"job", "submit", "-f", jobYAML, "--gpus", "two"}, 2, `--gpus "two": want a whole number`},
		"more GPUs than a node": {[]string{"job", "submit", "-f", jobYAML, "--gpus", "9"}, 1, "resources.gpus: 9 is out of range"},
		"NVLink of one GPU":     {[]string{"job", "submit", "-f", jobYAML, "--gpus", "1", "--nvlink"}, 1, "resources.nvlink: NVLink joins two or more whole GPUs"},
		"unknown image":         {[]string{"job", "submit", "-f", jobYAML, "--image", "no-such-image"}, 1, `image: "no-such-image" is not in the image catalog`},
		"unknown subcommand":    {[]string{"job", "list"}, 2, `"list" is not a command of gantry job`},
		"missing job file":      {[]string{"job", "submit", "-f", filepath.Join(u.dir, "none.yaml")}, 1, "read the job file"},
		"server gone":           {[]string{"job", "ls", "--server", "http://127.0.0.1:1"}, 1, "cannot reach http://127.0.0.1:1"},
		"template, no project":  {[]string{"job", "submit", "--template", "nightly", "--name", "n"}, 2, "--template needs the project it is saved in"},
		"no such template":      {[]string{"job", "submit", "--project", "default", "--template", "nope"}, 1, "name: project default has no template called nope"},
	} {
		_, stderr, code := u.run("", tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s: exit %d %q, want %d and one line with %q", name, code, stderr, tc.code, tc.want)
		}
	}

	// A second user gives the token on the command line instead of standard input.
	other := newCLIUser(t)
	if out, stderr, code := other.run("", "login", "--server", url, "--token", token); code != 0 || !strings.Contains(out, "Signed in") {
		t.Fatalf("login --token: exit %d %q", code, stderr)
	}
}
