package slurm

import (
	"errors"
	"strings"
)

var (
	errNotJobID     = errors.New("not a Slurm job id")
	errUnknownState = errors.New("not a Slurm job state this version of Gantry knows")
)

// validJobID accepts job ids as Slurm prints them: 123, or 123_4 for an array task.
func validJobID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for i, r := range id {
		if !(r >= '0' && r <= '9' || r == '_' && i > 0 && i < len(id)-1) {
			return false
		}
	}
	return true
}

// parseSubmitted reads `sbatch --parsable` output: the job id, and ";cluster" on
// multi-cluster sites.
func parseSubmitted(out []byte) (string, error) {
	s := strings.TrimSpace(string(out))
	id, _, _ := strings.Cut(s, ";")
	if !validJobID(id) || strings.ContainsAny(s, "\n") {
		return "", &ParseError{Command: "sbatch", Text: s, Err: errors.New("want the job id that --parsable prints")}
	}
	return id, nil
}

// lineError wraps what went wrong on one output line.
func lineError(command string, num int, line, jobID string, err error) *ParseError {
	pe := &ParseError{Command: command, Line: num, Text: line, JobID: jobID, Err: err}
	var fe *fieldError
	if errors.As(err, &fe) {
		pe.Field, pe.Text, pe.Err = fe.field, fe.text, fe.err
	}
	return pe
}

// parseClusterName reads the ClusterName line of `scontrol show config`, which
// prints the controller's configuration as "Key = value" lines.
func parseClusterName(out []byte) (string, error) {
	for i, l := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.TrimSpace(k) != "ClusterName" {
			continue
		}
		name := strings.TrimSpace(v)
		if !slurmName(name) {
			return "", &ParseError{Command: "scontrol show config", Line: i + 1, Field: "ClusterName", Text: l, Err: errors.New("want a cluster name")}
		}
		return name, nil
	}
	return "", &ParseError{Command: "scontrol show config", Text: string(out), Err: errors.New("no ClusterName line")}
}
