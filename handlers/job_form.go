package handlers

import (
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/jobs"
	"github.com/gantry-gpu/gantry/templates"
)

// jobFormLabels names each field of the submit form as the page labels it; errors
// start with the label, so that they read as the page does.
var jobFormLabels = map[string]string{
	"project": "Project", "name": "Name", "image": "Image", "custom_image": "Custom image", "command": "Command",
	"env": "Environment", "secret_env": "Secret variables", "gpus": "GPUs", "gpu_share": "GPU share", "gpu_memory_gib": "GPU memory", "gpu_model": "GPU model",
	"mig_profile": "MIG profile", "nvlink": "NVLink", "cpu_cores": "CPU cores", "memory_gib": "RAM", "scratch_gib": "Scratch disk",
	"replicas": "Replicas", "priority_class": "Priority class", "preemptible": "Preemptible", "expected_run": "Expected run time",
	"retries": "Retries", "kind": "Kind",
}

// specFields maps the fields of a job spec to the form's.
var specFields = map[string]string{
	"resources.gpus": "gpus", "resources.gpu_milli": "gpu_share", "resources.gpu_memory_mib": "gpu_memory_gib",
	"resources.gpu_model": "gpu_model", "resources.mig_profile": "mig_profile", "resources.nvlink": "nvlink", "resources.cpu_milli": "cpu_cores",
	"resources.memory_mib": "memory_gib", "resources.scratch_mib": "scratch_gib", "max_retries": "retries",
	"expected_run_sec": "expected_run",
}

// formFieldOf is the form field a spec's FieldError is about.
func formFieldOf(f templates.JobForm, field string) string {
	switch {
	case strings.HasPrefix(field, "command"):
		return "command"
	case strings.HasPrefix(field, "env"):
		if secret, _ := parseEnv("secret_env", f.SecretEnv); secret != nil {
			if _, ok := secret[strings.TrimPrefix(field, "env.")]; ok {
				return "secret_env"
			}
		}
		return "env"
	case field == "image" && strings.TrimSpace(f.CustomImage) != "":
		return "custom_image"
	}
	if ff, ok := specFields[field]; ok {
		return ff
	}
	if _, ok := jobFormLabels[field]; ok {
		return field
	}
	return ""
}

// FormCut is what the gate says of a form larger than the body bound that it let through
// cut at the bound (web's OrFormCut): the field cut off there, and the bound in bytes.
type FormCut struct {
	Field string
	Limit int64
}

// cutField is the error of the field the gate cut off, nil for a form read whole: a
// command is told the most a command may be, any other field the most a form may send.
func cutField(c *gin.Context) error {
	v, _ := c.Get(FormCutKey)
	cut, ok := v.(FormCut)
	switch {
	case !ok:
		return nil
	case cut.Field == "command":
		return models.Invalid("command", "is longer than %d bytes, the most a command may be (put long inputs in a file)", jobs.MaxCommandBytes)
	}
	return models.Invalid(cut.Field, "is longer than the %d KiB a form may send", cut.Limit>>10)
}

// formError turns a spec's FieldError into the form's: the field it is about, and the
// message starting with its label.
func formError(f templates.JobForm, fe *models.FieldError) (field, message string) {
	field = formFieldOf(f, fe.Field)
	label := jobFormLabels[field]
	if label == "" {
		label = fieldLabel(fe.Field)
	}
	msg := fe.Message
	if field == "env" && fe.Field != "env" {
		msg = strings.TrimPrefix(fe.Field, "env.") + " " + msg
	}
	return field, label + ": " + msg + "."
}

// preset is a resource profile the form offers ready-made.
type preset struct {
	value, label string
	res          jobs.Resources
}

const gibMiB = 1024

// presets are the profiles most jobs want. A "24 GB" card reports a little less than
// 24 GiB to NVML (an L4: 22.5 GiB), so the memory floors sit below the marketing size.
var presets = []preset{
	{"cpu", "No GPU (2 CPU cores, 8 GiB)", jobs.Resources{CPUMilli: 2000, MemoryMiB: 8 * gibMiB}},
	{"share-small", "1 small share (¼ GPU, 8 GiB)", jobs.Resources{GPUs: 1, GPUMilli: 250, GPUMemoryMiB: 8 * gibMiB, CPUMilli: 2000, MemoryMiB: 8 * gibMiB}},
	{"share-half", "½ GPU (16 GiB)", jobs.Resources{GPUs: 1, GPUMilli: 500, GPUMemoryMiB: 16 * gibMiB, CPUMilli: 4000, MemoryMiB: 16 * gibMiB}},
	{"mig-small", "1 MIG slice (1g.10gb)", jobs.Resources{GPUs: 1, MIGProfile: "1g.10gb", CPUMilli: 2000, MemoryMiB: 8 * gibMiB}},
	{"1x24", "1 × 24 GB GPU", jobs.Resources{GPUs: 1, GPUMemoryMiB: 22 * gibMiB, CPUMilli: 8000, MemoryMiB: 32 * gibMiB}},
	{"1x80", "1 × 80 GB GPU", jobs.Resources{GPUs: 1, GPUMemoryMiB: 78 * gibMiB, CPUMilli: 8000, MemoryMiB: 64 * gibMiB}},
	{"8x80-nvlink", "8 × 80 GB NVLink (a whole node)", jobs.Resources{GPUs: 8, GPUMemoryMiB: 78 * gibMiB, NVLink: true, CPUMilli: 64000, MemoryMiB: 512 * gibMiB}},
}

const customPreset = "custom"

// presetOptions lists the presets for the form's select, custom last.
func presetOptions() []templates.Option {
	out := make([]templates.Option, 0, len(presets)+1)
	for _, p := range presets {
		out = append(out, templates.Option{Value: p.value, Label: p.label})
	}
	return append(out, templates.Option{Value: customPreset, Label: "Custom"})
}

// applyPreset fills the resource fields of f from its preset.
func applyPreset(f *templates.JobForm) {
	for _, p := range presets {
		if p.value == f.Preset {
			setResources(f, p.res)
			return
		}
	}
}

// setResources writes r into the resource fields of f as a person types them.
func setResources(f *templates.JobForm, r jobs.Resources) {
	f.GPUs, f.GPUShare, f.GPUModel, f.MIGProfile, f.NVLink = strconv.Itoa(r.GPUs), "", r.GPUModel, r.MIGProfile, r.NVLink
	if r.GPUMilli > 0 {
		f.GPUShare = decimal(float64(r.GPUMilli) / 1000)
	}
	f.GPUMemoryGiB, f.CPUCores = gib(r.GPUMemoryMiB), decimal(float64(r.CPUMilli)/1000)
	f.MemoryGiB, f.ScratchGiB = gib(r.MemoryMiB), gib(r.ScratchMiB)
}

func gib(mib int64) string {
	if mib == 0 {
		return ""
	}
	return decimal(float64(mib) / gibMiB)
}

func decimal(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// presetOf names the preset r is, or custom.
func presetOf(r jobs.Resources) string {
	for _, p := range presets {
		if p.res == r {
			return p.value
		}
	}
	return customPreset
}

// defaultJobForm is the form as it first opens.
func defaultJobForm(project string) templates.JobForm {
	f := templates.JobForm{Project: project, Preset: "share-small", Replicas: "1", Retries: "0"}
	applyPreset(&f)
	return f
}

// jobFormOf reads the form's fields from a submitted form or query.
func jobFormOf(v url.Values) templates.JobForm {
	return templates.JobForm{
		Project: v.Get("project"), Name: v.Get("name"), Image: v.Get("image"), CustomImage: v.Get("custom_image"),
		Command: v.Get("command"), Env: v.Get("env"), SecretEnv: v.Get("secret_env"), SecretsOf: v.Get("secrets_of"), Preset: v.Get("preset"), GPUs: v.Get("gpus"), GPUShare: v.Get("gpu_share"),
		GPUMemoryGiB: v.Get("gpu_memory_gib"), GPUModel: v.Get("gpu_model"), MIGProfile: v.Get("mig_profile"),
		CPUCores: v.Get("cpu_cores"), MemoryGiB: v.Get("memory_gib"), ScratchGiB: v.Get("scratch_gib"), Replicas: v.Get("replicas"),
		PriorityClass: v.Get("priority_class"), Preemptible: v.Get("preemptible"), Spot: v.Get("spot") != "", NVLink: v.Get("nvlink") != "",
		ExpectedRun: v.Get("expected_run"), Retries: v.Get("retries"), Kind: v.Get("kind"),
	}
}

// specOfForm turns the form into a job spec. What only the form can get wrong (a number
// that is not one, a quote left open) is a FieldError naming the form's field; the
// spec's own validation is Submit's.
func specOfForm(f templates.JobForm) (jobs.Spec, error) {
	s := jobs.Spec{Project: strings.TrimSpace(f.Project), Name: strings.TrimSpace(f.Name), Image: strings.TrimSpace(f.Image),
		PriorityClass: f.PriorityClass, Spot: f.Spot, Kind: f.Kind}
	if c := strings.TrimSpace(f.CustomImage); c != "" {
		s.Image = c
	}
	var err error
	if s.Command, err = jobs.SplitCommand(f.Command); err != nil {
		return s, err
	}
	if s.Env, err = envOfForm(f); err != nil {
		return s, err
	}
	if f.SecretsOf != "" {
		if s.SecretsOf, err = strconv.ParseInt(f.SecretsOf, 10, 64); err != nil || s.SecretsOf <= 0 {
			return s, models.Invalid("secret_env", "the job to keep secret values of is a job number")
		}
	}
	r := &s.Resources
	r.GPUModel, r.MIGProfile, r.NVLink = strings.TrimSpace(f.GPUModel), strings.TrimSpace(f.MIGProfile), f.NVLink
	if r.GPUs, err = formInt("gpus", f.GPUs, 0, jobs.MaxGPUs); err != nil {
		return s, err
	}
	if r.GPUMilli, err = formShare(f.GPUShare); err != nil {
		return s, err
	}
	for _, q := range []struct {
		field, value string
		scale        float64
		dst          *int64
	}{
		{"gpu_memory_gib", f.GPUMemoryGiB, gibMiB, &r.GPUMemoryMiB},
		{"cpu_cores", f.CPUCores, 1000, &r.CPUMilli},
		{"memory_gib", f.MemoryGiB, gibMiB, &r.MemoryMiB},
		{"scratch_gib", f.ScratchGiB, gibMiB, &r.ScratchMiB},
	} {
		if *q.dst, err = formAmount(q.field, q.value, q.scale); err != nil {
			return s, err
		}
	}
	if s.Replicas, err = formInt("replicas", f.Replicas, 1, jobs.MaxReplicas); err != nil {
		return s, err
	}
	if s.MaxRetries, err = formInt("retries", f.Retries, 0, jobs.MaxRetries); err != nil {
		return s, err
	}
	switch f.Preemptible {
	case "yes", "no":
		p := f.Preemptible == "yes"
		s.Preemptible = &p
	case "":
	default:
		return s, models.Invalid("preemptible", "is yes, no, or empty for what the priority class says")
	}
	if s.ExpectedRunSec, err = formDuration(f.ExpectedRun); err != nil {
		return s, err
	}
	return s, nil
}

// formOfSpec writes a spec into the form, for a clone.
func formOfSpec(s jobs.Spec, catalog bool) templates.JobForm {
	f := templates.JobForm{Project: s.Project, Name: s.Name, Kind: s.Kind, Command: jobs.JoinCommand(s.Command), PriorityClass: s.PriorityClass,
		Spot: s.Spot, Replicas: strconv.Itoa(max(s.Replicas, 1)), Retries: strconv.Itoa(s.MaxRetries), Preset: presetOf(s.Resources)}
	if catalog {
		f.Image = s.Image
	} else {
		f.CustomImage = s.Image
	}
	setResources(&f, s.Resources)
	if s.Preemptible != nil {
		f.Preemptible = map[bool]string{true: "yes", false: "no"}[*s.Preemptible]
	}
	if s.ExpectedRunSec > 0 {
		f.ExpectedRun = shortDuration(time.Duration(s.ExpectedRunSec) * time.Second)
	}
	// Secret values never come back: their names do, left empty to keep the values.
	var env, secret []string
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if v := s.Env[k]; v.IsSecret(k) {
			secret = append(secret, k+"=")
		} else {
			env = append(env, k+"="+v.Value)
		}
	}
	f.Env, f.SecretEnv = strings.Join(env, "\n"), strings.Join(secret, "\n")
	if len(secret) > 0 && s.SecretsOf > 0 {
		f.SecretsOf = strconv.FormatInt(s.SecretsOf, 10)
	}
	return f
}

// envOfForm reads the Environment and Secret variables fields. A name that looks secret
// (jobs.SecretName) is secret in either.
func envOfForm(f templates.JobForm) (map[string]jobs.EnvVar, error) {
	plain, err := parseEnv("env", f.Env)
	if err != nil {
		return nil, err
	}
	secret, err := parseEnv("secret_env", f.SecretEnv)
	if err != nil {
		return nil, err
	}
	if len(plain)+len(secret) == 0 {
		return nil, nil
	}
	env := make(map[string]jobs.EnvVar, len(plain)+len(secret))
	for k, v := range plain {
		env[k] = jobs.Plain(v)
	}
	for _, k := range slices.Sorted(maps.Keys(secret)) {
		if _, dup := env[k]; dup {
			return nil, models.Invalid("secret_env", "%s is set under Environment too: keep it in one of them", k)
		}
		env[k] = jobs.Secret(secret[k])
	}
	return env, nil
}

func formInt(field, v string, lo, hi int) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return lo, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, models.Invalid(field, "must be a whole number from %d to %d", lo, hi)
	}
	return n, nil
}

// maxAmount bounds decimal amounts (GiB, cores) far above any machine, so that the
// conversion to integers cannot overflow.
const maxAmount = 1 << 30

// formAmount reads a decimal amount (GiB, CPU cores) as an integer count of scale units.
func formAmount(field, v string, scale float64) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x > maxAmount {
		return 0, models.Invalid(field, "must be a number of 0 or more, such as 8 or 0.5")
	}
	return int64(math.Round(x * scale)), nil
}

// formShare reads a share of one GPU (0.25) as milli-GPU; empty means whole GPUs.
func formShare(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "0" || v == "1" {
		return 0, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	milli := int(math.Round(x * 1000))
	if err != nil || math.IsNaN(x) || milli < 1 || milli > 999 {
		return 0, models.Invalid("gpu_share", "is a fraction of one GPU from 0.001 to 0.999, such as 0.25; leave it empty for whole GPUs")
	}
	return milli, nil
}

// formDuration reads the expected run time: a Go duration such as 90m or 2h30m.
func formDuration(v string) (int64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, models.Invalid("expected_run", "is a duration such as 45m, 2h or 1h30m (empty when unknown)")
	}
	return int64(d / time.Second), nil
}

// parseEnv reads NAME=value lines; blank lines and lines starting with # are skipped.
func parseEnv(field, text string) (map[string]string, error) {
	env := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, models.Invalid(field, "line %d is not NAME=value", i+1)
		}
		if err := jobs.CheckEnvName(field, k); err != nil {
			return nil, err
		}
		if _, dup := env[k]; dup {
			return nil, models.Invalid(field, "line %d sets %s a second time", i+1, k)
		}
		env[k] = v
	}
	if len(env) == 0 {
		return nil, nil
	}
	return env, nil
}
