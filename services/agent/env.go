package agent

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// passedEnv are the agent's variables a job inherits; nothing else of the agent's
// environment (which may hold its join token) reaches a job.
var passedEnv = []string{"PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME"}

// jobContext is where an attempt runs and how it reaches the server.
type jobContext struct {
	work, scratch, checkpoints string
	// server is the URL the job reports to (GANTRY_SERVER), token its job token.
	server, token string
	// container: the job runs in a container, whose image has its own PATH and locale;
	// the directories are where the container sees them.
	container bool
}

// jobEnv is the environment of an attempt: the basics, the job's own variables,
// then Gantry's, which the job cannot override.
func jobEnv(l agentapi.Lease, jc jobContext) []string {
	env := map[string]string{"HOME": jc.work, "TMPDIR": jc.scratch}
	if !jc.container {
		for _, k := range passedEnv {
			if v, ok := os.LookupEnv(k); ok {
				env[k] = v
			}
		}
		if _, ok := env["PATH"]; !ok {
			env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
		}
	}
	for k, v := range l.Env {
		env[k] = v
	}
	for k, v := range l.SecretEnv {
		env[k] = v
	}
	uuids := make([]string, len(l.Devices))
	for i, d := range l.Devices {
		uuids[i] = d.Visible()
	}
	visible := strings.Join(uuids, ",")
	nvidia := visible
	if nvidia == "" {
		nvidia = "void" // the NVIDIA container runtime's word for no GPU
	}
	// Where MPS serves a shared GPU, it holds the job to its share's memory too; the
	// job sees its one GPU as device 0.
	if lim := memoryLimits(l); len(lim) == 1 && len(l.Devices) == 1 {
		env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = fmt.Sprintf("0=%dM", lim[l.Devices[0].UUID])
	}
	for k, v := range map[string]string{
		"GANTRY_JOB_ID":                  strconv.FormatInt(l.JobID, 10),
		"GANTRY_JOB_NAME":                l.JobName,
		"GANTRY_ATTEMPT":                 strconv.Itoa(l.Attempt),
		"GANTRY_REPLICA":                 strconv.Itoa(l.Replica),
		"GANTRY_CHECKPOINT_DIR":          jc.checkpoints,
		"GANTRY_CHECKPOINT_REQUEST_FILE": jc.checkpoints + "/" + CheckpointRequestFile,
		"GANTRY_SCRATCH_DIR":             jc.scratch,
		"GANTRY_SERVER":                  jc.server,
		"GANTRY_JOB_TOKEN":               jc.token,
		"CUDA_VISIBLE_DEVICES":           visible,
		"NVIDIA_VISIBLE_DEVICES":         nvidia,
	} {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	sort.Strings(out)
	return out
}
