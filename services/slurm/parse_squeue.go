package slurm

import "strings"

// squeueFormat asks squeue for what parseSqueue reads: id, name, state, reason,
// partition, QOS, user, account, submit, start, end, elapsed, time limit, node list,
// node count, CPUs, memory, TRES per node, comment. Free text goes last but one and last.
const squeueFormat = "%A" + sep + "%j" + sep + "%T" + sep + "%r" + sep + "%P" + sep + "%q" + sep + "%u" + sep +
	"%a" + sep + "%V" + sep + "%S" + sep + "%e" + sep + "%M" + sep + "%l" + sep + "%N" + sep + "%D" + sep +
	"%C" + sep + "%m" + sep + "%b" + sep + "%k"

const squeueFields = 19

// parseSqueue reads squeue output in squeueFormat. A line it cannot read does not spoil
// the others: it comes back as a *ParseError naming the job when its id was readable.
func parseSqueue(out []byte) ([]Job, []*ParseError) {
	var jobs []Job
	var bad []*ParseError
	nums, text := lines(out)
	for i, line := range text {
		j, err := parseSqueueLine(line)
		if err != nil {
			bad = append(bad, lineError("squeue", nums[i], line, j.ID, err))
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, bad
}

func parseSqueueLine(line string) (Job, error) {
	f, err := fields(line, squeueFields)
	if err != nil {
		return Job{}, err
	}
	j := Job{
		ID: strings.TrimSpace(f[0]), Name: f[1], State: strings.TrimSpace(f[2]), Reason: clean(f[3]),
		Partition: clean(f[4]), QOS: clean(f[5]), User: clean(f[6]), Account: clean(f[7]),
		NodeList: clean(f[13]), TRES: clean(f[17]), Comment: clean(f[18]),
	}
	if !validJobID(j.ID) {
		return Job{}, &fieldError{"job_id", f[0], errNotJobID}
	}
	if _, ok := phaseOf(j.State); !ok {
		return j, &fieldError{"state", f[2], errUnknownState}
	}
	if j.Submit, err = parseTime("submit_time", f[8]); err != nil {
		return j, err
	}
	if j.Start, err = parseTime("start_time", f[9]); err != nil {
		return j, err
	}
	if j.End, err = parseTime("end_time", f[10]); err != nil {
		return j, err
	}
	if j.Elapsed, err = parseDuration("time_used", f[11]); err != nil {
		return j, err
	}
	if j.TimeLimit, err = parseDuration("time_limit", f[12]); err != nil {
		return j, err
	}
	if j.Nodes, err = parseInt("nodes", f[14]); err != nil {
		return j, err
	}
	if j.CPUs, err = parseInt("cpus", f[15]); err != nil {
		return j, err
	}
	if j.MemoryMiB, err = parseMemMiB("min_memory", f[16]); err != nil {
		return j, err
	}
	return j, nil
}

// clean trims a field and turns Slurm's "no value" spellings into "".
func clean(s string) string {
	if unset(s) {
		return ""
	}
	return strings.TrimSpace(s)
}
