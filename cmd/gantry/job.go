package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/jobs"
)

func newJobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Submit, list, follow, hold, release, cancel and re-run jobs on a Gantry server (after gantry login)",
	}
	cmd.AddCommand(newJobSubmitCmd(), newJobLsCmd(), newJobGetCmd(), newJobLogsCmd(), newJobCancelCmd(), newJobHoldCmd(), newJobReleaseCmd(), newJobRerunCmd())
	return cmd
}

// cliJob is what the CLI shows of a job of the API.
type cliJob struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	Project       string     `json:"project"`
	User          string     `json:"user"`
	State         string     `json:"state"`
	StateReason   string     `json:"state_reason"`
	PendingReason string     `json:"pending_reason"`
	Image         string     `json:"image"`
	ImageName     string     `json:"image_name"`
	Command       []string   `json:"command"`
	PriorityClass string     `json:"priority_class"`
	Attempt       int        `json:"attempt"`
	ExitCode      *int       `json:"exit_code"`
	RerunOf       *int64     `json:"rerun_of"`
	SubmittedAt   time.Time  `json:"submitted_at"`
	StartedAt     *time.Time `json:"started_at"`
	FinishedAt    *time.Time `json:"finished_at"`
	Resources     struct {
		GPUs       int    `json:"gpus"`
		GPUMilli   int    `json:"gpu_milli"`
		GPUModel   string `json:"gpu_model"`
		MIGProfile string `json:"mig_profile"`
		NVLink     bool   `json:"nvlink"`
		CPUMilli   int64  `json:"cpu_milli"`
		MemoryMiB  int64  `json:"memory_mib"`
	} `json:"resources"`
	Events      []cliEvent `json:"events"`
	Allocations []struct {
		Attempt int    `json:"attempt"`
		Node    string `json:"node"`
		State   string `json:"state"`
		GPUs    []struct {
			UUID string `json:"uuid"`
		} `json:"gpus"`
	} `json:"allocations"`
}

// cliEvent is a step of a job's timeline.
type cliEvent struct {
	At      time.Time `json:"at"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// image names the job's image as its page does: the catalog entry and its reference.
func (j cliJob) image() string {
	switch {
	case j.ImageName != "" && j.Image != "":
		return j.ImageName + " (" + j.Image + ")"
	case j.ImageName != "":
		return j.ImageName
	}
	return dashIfEmpty(j.Image)
}

func (j cliJob) gpus() string {
	r := j.Resources
	switch {
	case r.MIGProfile != "":
		return "MIG " + r.MIGProfile
	case r.GPUMilli > 0:
		return strconv.FormatFloat(float64(r.GPUMilli)/1000, 'f', -1, 64)
	}
	s := strconv.Itoa(r.GPUs)
	if r.GPUModel != "" {
		s += "×" + r.GPUModel
	}
	if r.NVLink {
		s += " NVLink"
	}
	return s
}

func utc(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// jobID reads the ID argument of a job command.
func jobID(args []string) (int64, error) {
	if len(args) != 1 {
		return 0, usageError{errors.New("give one job ID, e.g. 42")}
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError{fmt.Errorf("job ID %q: want a positive number, e.g. 42", args[0])}
	}
	return id, nil
}

// submitFlags are the job fields that flags of gantry job submit set, by the name the
// API gives them (resources.* inside resources).
var submitFlags = []struct {
	flag, field, kind, help string
}{
	{"project", "project", "string", "project to run in"},
	{"name", "name", "string", "name of the job"},
	{"kind", "kind", "string", "training, inference or batch (steers to suited GPU models when none is named)"},
	{"image", "image", "string", "catalog image name, or a reference where the project allows custom images"},
	{"priority-class", "priority_class", "string", "priority class: production, research or test"},
	{"gpus", "resources.gpus", "int", "whole GPUs per replica"},
	{"gpu-milli", "resources.gpu_milli", "int", "a share of one GPU in thousandths (250 = a quarter)"},
	{"gpu-memory-mib", "resources.gpu_memory_mib", "int", "GPU memory per GPU, MiB"},
	{"gpu-model", "resources.gpu_model", "string", "GPU model, e.g. A100 or A100|H100"},
	{"mig-profile", "resources.mig_profile", "string", "MIG profile, e.g. 1g.10gb"},
	{"nvlink", "resources.nvlink", "bool", "the GPUs (2 or more) joined by NVLink, each to every other"},
	{"cpu-milli", "resources.cpu_milli", "int", "CPU in thousandths of a core"},
	{"memory-mib", "resources.memory_mib", "int", "RAM, MiB"},
	{"scratch-mib", "resources.scratch_mib", "int", "scratch disk, MiB"},
	{"replicas", "replicas", "int", "replicas started all at once (gang)"},
	{"max-retries", "max_retries", "int", "retries after a failure"},
	{"preemptible", "preemptible", "bool", "may be preempted (default: the priority class's)"},
	{"spot", "spot", "bool", "may run on spot capacity"},
}

func newJobSubmitCmd() *cobra.Command {
	var o clientOpts
	var file, template string
	var env []string
	cmd := &cobra.Command{
		Use:   "submit [-f job.yaml] [--template NAME] [flags] [-- command args…]",
		Short: "Submit a job from a job.yaml file, a saved template, flags, or all (flags win)",
		Long: `Submit a job. job.yaml has the fields of the API's job (see README "job.yaml"):

  project: default
  name: train-resnet
  image: pytorch-2.4-cuda12.4
  command: [python, train.py, --epochs, "10"]
  env: {WANDB_MODE: offline}
  resources: {gpus: 1, cpu_milli: 4000, memory_mib: 16384}
  priority_class: research

--template NAME starts from a template saved in the project (on the submit form, or
POST /api/v1/projects/{project}/templates); the file, flags and command override it.
Flags set or override single fields; words after -- are the command.`,
		Example: `  gantry job submit -f job.yaml
  gantry job submit -f job.yaml --gpus 2 --name train-2
  gantry job submit --project default --template nightly-eval --name eval-7
  gantry job submit --project default --name hello --gpus 1 -- python -c 'print(42)'`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			spec, err := jobSpec(cmd, file, env, args)
			if err != nil {
				return err
			}
			if template != "" {
				if spec, err = withTemplate(cmd.Context(), c, template, spec); err != nil {
					return err
				}
			}
			body, err := json.Marshal(spec)
			if err != nil {
				return fmt.Errorf("encode the job: %w", err)
			}
			raw, err := submitJob(cmd.Context(), c, body, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			var j cliJob
			if err := json.Unmarshal(raw, &j); err != nil {
				return fmt.Errorf("read the answer: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Submitted job %d (%s): %s. Follow it with: gantry job logs -f %d\n", j.ID, j.Name, j.State, j.ID)
			return nil
		},
	}
	o.addFlags(cmd, true)
	cmd.Flags().StringVarP(&file, "file", "f", "", "job.yaml (or JSON) with the job; - reads standard input")
	cmd.Flags().StringArrayVar(&env, "env", nil, "environment variable NAME=VALUE for the job (repeatable)")
	cmd.Flags().StringVar(&template, "template", "", "start from this template of the project (--project or the file's)")
	for _, f := range submitFlags {
		switch f.kind {
		case "string":
			cmd.Flags().String(f.flag, "", f.help)
		case "int":
			cmd.Flags().Int(f.flag, 0, f.help)
		case "bool":
			cmd.Flags().Bool(f.flag, false, f.help)
		}
	}
	return cmd
}

// jobSpec builds the job body from the file, then the flags that were given, then
// the command words. The server validates it and names any field it refuses.
func jobSpec(cmd *cobra.Command, file string, env, command []string) (map[string]any, error) {
	spec := map[string]any{}
	if file != "" {
		var b []byte
		var err error
		if file == "-" {
			b, err = io.ReadAll(cmd.InOrStdin())
		} else {
			b, err = os.ReadFile(file)
		}
		if err != nil {
			return nil, fmt.Errorf("read the job file: %w", err)
		}
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, usageError{fmt.Errorf("%s is not valid YAML: %v", file, err)}
		}
		m, ok := v.(map[string]any)
		if !ok && v != nil {
			return nil, usageError{fmt.Errorf("%s must be a mapping of job fields (project, name, command, resources, …)", file)}
		}
		if m != nil {
			spec = m
		}
	}
	for _, f := range submitFlags {
		fl := cmd.Flags().Lookup(f.flag)
		if !fl.Changed {
			continue
		}
		var v any
		switch f.kind {
		case "string":
			v = fl.Value.String()
		case "int":
			v, _ = cmd.Flags().GetInt(f.flag)
		case "bool":
			v, _ = cmd.Flags().GetBool(f.flag)
		}
		if err := setField(spec, f.field, v); err != nil {
			return nil, usageError{fmt.Errorf("--%s: %v", f.flag, err)}
		}
	}
	if len(env) > 0 {
		vars, ok := spec["env"].(map[string]any)
		if !ok {
			vars = map[string]any{}
		}
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageError{fmt.Errorf("--env %q: want NAME=VALUE", kv)}
			}
			vars[k] = v
		}
		spec["env"] = vars
	}
	if len(command) > 0 {
		spec["command"] = command
	}
	return spec, nil
}

// withTemplate lays spec over the template name of spec's project: what the file, the
// flags and the command words say wins over the template's.
func withTemplate(ctx context.Context, c *apiClient, name string, spec map[string]any) (map[string]any, error) {
	project, _ := spec["project"].(string)
	if project == "" {
		return nil, usageError{errors.New("--template needs the project it is saved in: add --project NAME (or project: in the file)")}
	}
	var t struct {
		Spec map[string]any `json:"spec"`
	}
	if _, err := c.getJSON(ctx, "/api/v1/projects/"+url.PathEscape(project)+"/templates/"+url.PathEscape(name), nil, &t); err != nil {
		return nil, err
	}
	if t.Spec == nil {
		return nil, fmt.Errorf("template %s of %s came back without a spec", name, project)
	}
	return overlay(t.Spec, spec), nil
}

// overlay sets every field of top over base, mappings (resources, env) field by field.
func overlay(base, top map[string]any) map[string]any {
	for k, v := range top {
		if sub, ok := v.(map[string]any); ok {
			if b, ok := base[k].(map[string]any); ok {
				base[k] = overlay(b, sub)
				continue
			}
		}
		base[k] = v
	}
	return base
}

// setField sets a field of spec, "resources.gpus" inside resources.
func setField(spec map[string]any, field string, v any) error {
	parent, name, nested := strings.Cut(field, ".")
	if !nested {
		spec[field] = v
		return nil
	}
	sub, ok := spec[parent].(map[string]any)
	if !ok {
		if spec[parent] != nil {
			return fmt.Errorf("the file's %s is not a mapping", parent)
		}
		sub = map[string]any{}
		spec[parent] = sub
	}
	sub[name] = v
	return nil
}

func newJobLsCmd() *cobra.Command {
	var o clientOpts
	filters := []struct{ flag, param, help string }{
		{"state", "state", "states, comma-separated: queued, held, scheduled, running, preempting, succeeded, failed, cancelled"},
		{"project", "project", "project names, comma-separated"},
		{"user", "user", "submitter's username"},
		{"image", "image", "catalog image name or reference"},
		{"from", "from", "submitted at or after: 2026-03-01 or an RFC 3339 time"},
		{"to", "to", "submitted before: an RFC 3339 time, or a day (included)"},
		{"sort", "sort", "-submitted_at (default), submitted_at, name, -name, -gpus, gpus"},
		{"limit", "limit", "jobs per page, 1 to 200 (default 50)"},
		{"cursor", "cursor", "continue where the page before ended (printed below it)"},
	}
	values := make([]string, len(filters))
	cmd := &cobra.Command{
		Use:   "ls",
		Args:  noArgs,
		Short: "List the jobs you may see, newest first",
		Example: `  gantry job ls --state running,queued
  gantry job ls --project vision --user ada -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			q := url.Values{}
			for i, f := range filters {
				if values[i] != "" {
					q.Set(f.param, values[i])
				}
			}
			var page struct {
				Jobs       []cliJob `json:"jobs"`
				NextCursor *string  `json:"next_cursor"`
			}
			raw, err := c.getJSON(cmd.Context(), "/api/v1/jobs", q, &page)
			if err != nil {
				return err
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPROJECT\tUSER\tSTATE\tGPUS\tSUBMITTED (UTC)")
			for _, j := range page.Jobs {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Name, j.Project, j.User, j.State, j.gpus(), utc(&j.SubmittedAt))
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(page.Jobs) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No jobs match. Submit one with: gantry job submit -f job.yaml")
			}
			if page.NextCursor != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "More jobs: add --cursor %s\n", *page.NextCursor)
			}
			return nil
		},
	}
	o.addFlags(cmd, true)
	for i, f := range filters {
		cmd.Flags().StringVar(&values[i], f.flag, "", f.help)
	}
	return cmd
}

func newJobGetCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show a job: state, events, where it ran",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(args)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var j cliJob
			raw, err := c.getJSON(cmd.Context(), fmt.Sprintf("/api/v1/jobs/%d", id), nil, &j)
			if err != nil {
				return fmt.Errorf("job %d: %w", id, err)
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			return printJob(cmd.OutOrStdout(), j)
		},
	}
	o.addFlags(cmd, true)
	return cmd
}

func printJob(out io.Writer, j cliJob) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	state := j.State
	if j.StateReason != "" && j.StateReason != j.State {
		state += " (" + j.StateReason + ")"
	}
	exit := "-"
	if j.ExitCode != nil {
		exit = strconv.Itoa(*j.ExitCode)
		if sig := agentapi.ExitSignal(*j.ExitCode); sig != "" {
			exit += " (" + sig + ")"
		}
	}
	for _, kv := range [][2]string{
		{"ID", strconv.FormatInt(j.ID, 10)}, {"Name", j.Name}, {"Project", j.Project}, {"User", j.User},
		{"State", state}, {"Image", j.image()}, {"Command", jobs.JoinCommand(j.Command)}, {"GPUs", j.gpus()},
		{"Priority class", j.PriorityClass}, {"Attempt", strconv.Itoa(j.Attempt)}, {"Exit code", exit},
		{"Submitted (UTC)", utc(&j.SubmittedAt)}, {"Started", utc(j.StartedAt)}, {"Finished", utc(j.FinishedAt)},
	} {
		fmt.Fprintf(w, "%s:\t%s\n", kv[0], kv[1])
	}
	if j.RerunOf != nil {
		fmt.Fprintf(w, "Re-run of:\tjob %d\n", *j.RerunOf)
	}
	if j.PendingReason != "" {
		fmt.Fprintf(w, "Waiting because:\t%s\n", j.PendingReason)
	}
	for _, a := range j.Allocations {
		var gpus []string
		for _, g := range a.GPUs {
			gpus = append(gpus, g.UUID)
		}
		fmt.Fprintf(w, "Ran on:\tattempt %d on %s (%s) %s\n", a.Attempt, a.Node, a.State, strings.Join(gpus, ","))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(j.Events) > 0 {
		fmt.Fprintln(out, "Events:")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for _, e := range j.Events {
			from := e.From
			if from == "" {
				from = "·"
			}
			what := e.Reason
			if e.Message != "" {
				what += ": " + oneLine(e.Message)
			}
			fmt.Fprintf(w, "  %s\t%s → %s\t%s\n", utc(&e.At), from, e.To, what)
		}
		return w.Flush()
	}
	return nil
}

// oneLine is s with its control characters (a node's words may hold line breaks or
// escapes) as spaces: an event is one line of the terminal.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

func newJobCancelCmd() *cobra.Command {
	return newJobActionCmd("cancel", "Cancel a job (a running one is asked to checkpoint, then stopped)")
}

func newJobHoldCmd() *cobra.Command {
	return newJobActionCmd("hold", "Hold a job: a queued one does not start, a running one checkpoints and stops; both wait for release")
}

func newJobReleaseCmd() *cobra.Command {
	return newJobActionCmd("release", "Queue a held job again; it resumes from its checkpoint if it saved one")
}

func newJobRerunCmd() *cobra.Command {
	return newJobActionCmd("rerun", "Submit a job again as it was; the new job says which it re-ran")
}

// newJobActionCmd is a job verb that POSTs to /api/v1/jobs/ID/verb and says the
// state the job it answers is in after it (for rerun, the new job).
func newJobActionCmd(verb, short string) *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := jobID(args)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			raw, err := c.call(cmd.Context(), http.MethodPost, fmt.Sprintf("/api/v1/jobs/%d/%s", id, verb), nil, nil)
			if err != nil {
				return fmt.Errorf("%s job %d: %w", verb, id, err)
			}
			if o.output != "table" {
				return printRaw(cmd.OutOrStdout(), o.output, raw)
			}
			var j cliJob
			if err := json.Unmarshal(raw, &j); err != nil {
				return fmt.Errorf("read the answer: %w", err)
			}
			if j.RerunOf != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "Job %d (%s), a re-run of job %d, is %s.\n", j.ID, j.Name, *j.RerunOf, j.State)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Job %d (%s) is %s.\n", j.ID, j.Name, j.State)
			return nil
		},
	}
	o.addFlags(cmd, true)
	return cmd
}
