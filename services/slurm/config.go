package slurm

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// Config is a Slurm pool's provider configuration (models.NodePool.ProviderConfig).
type Config struct {
	// Partition is the Slurm partition this pool submits to and shows.
	Partition string `json:"partition"`
	// Account is charged by Slurm's own accounting; empty: the user's default.
	Account string `json:"account,omitempty"`
	// BinDir holds sbatch, squeue, ...; empty: found on PATH.
	BinDir string `json:"bin_dir,omitempty"`
	// SlurmConf is the slurm.conf the commands read; empty: Slurm's default.
	SlurmConf string `json:"slurm_conf,omitempty"`
	// LogDir is where jobs write stdout and stderr, on a file system that both the
	// Slurm nodes and the Gantry server see.
	LogDir string `json:"log_dir"`
	// CheckpointDir is the parent of each job's GANTRY_CHECKPOINT_DIR, shared likewise.
	CheckpointDir string `json:"checkpoint_dir"`
	// QOS maps a Gantry priority class to a Slurm QOS; a class not listed gets the
	// account's default QOS.
	QOS map[string]string `json:"qos,omitempty"`
	// GRESTypes maps a Gantry GPU model (A100-80GB) or MIG profile (3g.40gb) to the
	// Slurm GRES type of the site (a100). Jobs that name a model need an entry.
	GRESTypes map[string]string `json:"gres_types,omitempty"`
	// GPUOption is how GPUs are asked for: "gres" (--gres=gpu:TYPE:N per node, the
	// default) or "gpus" (--gpus=TYPE:N per job).
	GPUOption string `json:"gpu_option,omitempty"`
	// Container is the site's container plugin: "" (plain commands only) or "pyxis"
	// (srun --container-image).
	Container string `json:"container,omitempty"`
	// NVLink says the GPUs of each node of the partition are joined by NVLink each to
	// every other (NVSwitch boards, as in DGX and HGX machines), which Slurm's inventory
	// does not tell: jobs that require NVLink may then run on the pool.
	NVLink bool `json:"nvlink,omitempty"`
	// ContainerMounts are bind mounts into every job's container besides its
	// checkpoint directory, as pyxis reads them: SRC:DST or SRC:DST:FLAGS (flags
	// joined by +, e.g. ro+rprivate), both paths absolute.
	ContainerMounts []string `json:"container_mounts,omitempty"`
	// CommandTimeoutSec bounds each command; 0: 30 s.
	CommandTimeoutSec int `json:"command_timeout_sec,omitempty"`
	// Installation tells this Gantry's jobs from any other's on the cluster: it is
	// part of their Slurm names, log files and checkpoint directories. Gantry sets it
	// (one per database); it is not part of a pool's configuration.
	Installation string `json:"-"`
}

// ParseConfig reads a pool's provider configuration strictly and validates it.
func ParseConfig(raw string) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, models.Invalid("provider_config", "is not a Slurm pool configuration: %v", err)
	}
	return c, c.Validate()
}

// Validate names the first field that is wrong and what it allows.
func (c Config) Validate() error {
	switch {
	case !slurmName(c.Partition):
		return models.Invalid("partition", "must name a Slurm partition (letters, digits, - _ .), got %q", c.Partition)
	case c.Account != "" && !slurmName(c.Account):
		return models.Invalid("account", "must be a Slurm account name (letters, digits, - _ .), got %q", c.Account)
	case c.BinDir != "" && !filepath.IsAbs(c.BinDir):
		return models.Invalid("bin_dir", "must be an absolute path, got %q", c.BinDir)
	case c.SlurmConf != "" && !filepath.IsAbs(c.SlurmConf):
		return models.Invalid("slurm_conf", "must be an absolute path, got %q", c.SlurmConf)
	case !filepath.IsAbs(c.LogDir):
		return models.Invalid("log_dir", "must be an absolute path on a file system shared with the Slurm nodes, got %q", c.LogDir)
	case !filepath.IsAbs(c.CheckpointDir):
		return models.Invalid("checkpoint_dir", "must be an absolute path on a file system shared with the Slurm nodes, got %q", c.CheckpointDir)
	case c.GPUOption != "" && c.GPUOption != "gres" && c.GPUOption != "gpus":
		return models.Invalid("gpu_option", "must be gres or gpus, got %q", c.GPUOption)
	case c.Container != "" && c.Container != "pyxis":
		return models.Invalid("container", "must be empty (plain commands) or pyxis, got %q", c.Container)
	case c.Installation != "" && (!slurmName(c.Installation) || strings.ContainsAny(c.Installation, "-.")):
		return models.Invalid("installation", "must be letters, digits and _, got %q", c.Installation)
	case c.CommandTimeoutSec < 0 || c.CommandTimeoutSec > 600:
		return models.Invalid("command_timeout_sec", "must be 0 (30 s) to 600, got %d", c.CommandTimeoutSec)
	}
	if len(c.ContainerMounts) > 0 && c.Container == "" {
		return models.Invalid("container_mounts", "need a container plugin: set container to pyxis, or leave container_mounts out")
	}
	for _, m := range c.ContainerMounts {
		if err := checkMount(m); err != nil {
			return err
		}
	}
	for _, class := range sortedKeys(c.QOS) {
		if !slurmName(c.QOS[class]) {
			return models.Invalid("qos", "class %s maps to %q, not a Slurm QOS name", class, c.QOS[class])
		}
	}
	for _, model := range sortedKeys(c.GRESTypes) {
		if t := c.GRESTypes[model]; !slurmName(t) || strings.Contains(t, ":") {
			return models.Invalid("gres_types", "model %s maps to %q, not a GRES type", model, t)
		}
	}
	return nil
}

// checkMount accepts a pyxis bind mount: SRC:DST[:FLAGS], clean absolute paths of
// letters, digits and / . _ - (never the commas and colons that separate mounts and
// their parts), flags of letters joined by +.
func checkMount(m string) error {
	parts := strings.Split(m, ":")
	bad := len(parts) < 2 || len(parts) > 3
	for _, p := range parts[:min(len(parts), 2)] {
		bad = bad || !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.Trim(p, pathChars) != ""
	}
	if len(parts) == 3 {
		for _, f := range strings.Split(parts[2], "+") {
			bad = bad || f == "" || strings.Trim(f, "abcdefghijklmnopqrstuvwxyz") != ""
		}
	}
	if bad {
		return models.Invalid("container_mounts", "%q is not a mount: want SRC:DST or SRC:DST:FLAGS, absolute paths without commas or spaces, flags such as ro or ro+rprivate", m)
	}
	return nil
}

const pathChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-"

// CommandTimeout is how long one command may take.
func (c Config) CommandTimeout() time.Duration {
	if c.CommandTimeoutSec == 0 {
		return 30 * time.Second
	}
	return time.Duration(c.CommandTimeoutSec) * time.Second
}

// ModelOf is the Gantry GPU model of a GRES type: the model that GRESTypes maps to
// it, or the type itself when none does.
func (c Config) ModelOf(gresType string) string {
	for _, model := range sortedKeys(c.GRESTypes) {
		if c.GRESTypes[model] == gresType {
			return model
		}
	}
	return gresType
}

// slurmName accepts partition, account, QOS and GRES type names.
func slurmName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
