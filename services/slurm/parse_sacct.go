package slurm

import (
	"sort"
	"strings"
	"time"
)

// sacctFormat lists the sacct fields parseSacct reads, in this order.
const sacctFormat = "JobIDRaw,JobName,State,ExitCode,Submit,Start,End,ElapsedRaw,AllocTRES,Partition,QOS,NodeList,User,Account"

const sacctFields = 14

// parseSacct reads `sacct -X -D -P -n --noconvert --delimiter=sep` output in
// sacctFormat: one line per run of a job (-D keeps the runs before each requeue).
// Runs come back grouped by job, oldest run first. Lines it cannot read come back
// as *ParseErrors naming the job when its id was readable.
func parseSacct(out []byte) (map[string][]Run, []*ParseError) {
	runs := map[string][]Run{}
	var bad []*ParseError
	nums, text := lines(out)
	for i, line := range text {
		r, err := parseSacctLine(line)
		if err != nil {
			bad = append(bad, lineError("sacct", nums[i], line, r.JobID, err))
			continue
		}
		runs[r.JobID] = append(runs[r.JobID], r)
	}
	for _, rs := range runs {
		sort.SliceStable(rs, func(a, b int) bool { return runBefore(rs[a], rs[b]) })
	}
	return runs, bad
}

// runBefore orders the runs of one job: a requeued run is resubmitted when it ends,
// so submit times order them; a run that never started sorts after those that did.
func runBefore(a, b Run) bool {
	if !a.Submit.Equal(b.Submit) {
		return a.Submit.Before(b.Submit)
	}
	return !a.Start.IsZero() && (b.Start.IsZero() || a.Start.Before(b.Start))
}

func parseSacctLine(line string) (Run, error) {
	f, err := fields(line, sacctFields)
	if err != nil {
		return Run{}, err
	}
	r := Run{
		JobID: strings.TrimSpace(f[0]), Name: f[1], Partition: clean(f[9]), QOS: clean(f[10]),
		NodeList: clean(f[11]), User: clean(f[12]), Account: clean(f[13]),
	}
	if !validJobID(r.JobID) {
		return Run{}, &fieldError{"job_id", f[0], errNotJobID}
	}
	// "CANCELLED by 1000" names who cancelled; the state is the first word.
	r.State, _, _ = strings.Cut(strings.TrimSpace(f[2]), " ")
	if _, ok := phaseOf(r.State); !ok {
		return r, &fieldError{"state", f[2], errUnknownState}
	}
	if r.ExitCode, r.Signal, err = parseExitCode("exit_code", f[3]); err != nil {
		return r, err
	}
	if r.Submit, err = parseTime("submit", f[4]); err != nil {
		return r, err
	}
	if r.Start, err = parseTime("start", f[5]); err != nil {
		return r, err
	}
	if r.End, err = parseTime("end", f[6]); err != nil {
		return r, err
	}
	secs, err := parseInt("elapsed_raw", f[7])
	if err != nil {
		return r, err
	}
	r.Elapsed = time.Duration(secs) * time.Second
	if r.Alloc, err = parseTRES("alloc_tres", f[8]); err != nil {
		return r, err
	}
	return r, nil
}
