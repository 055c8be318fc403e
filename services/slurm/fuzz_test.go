package slurm

import (
	"errors"
	"strings"
	"testing"
)

// The parsers read whatever the commands print, so garbage must give an error that
// names what was unparsable, never a panic, and never a job or run out of nothing.

func seedFixtures(f *testing.F, names ...string) {
	for _, n := range names {
		b := readFixture(&testing.T{}, n)
		f.Add(b)
		lines := strings.Split(string(b), "\n")
		f.Add([]byte(lines[0]))
	}
	f.Add([]byte(""))
	f.Add([]byte("\x1f\x1f\x1f"))
	f.Add([]byte("slurm_load_jobs error: Unable to contact slurm controller"))
}

func FuzzParseSqueue(f *testing.F) {
	seedFixtures(f, "squeue_mixed.txt", "squeue_later.txt")
	f.Fuzz(func(t *testing.T, out []byte) {
		jobs, bad := parseSqueue(out)
		nums, _ := lines(out)
		if len(jobs)+len(bad) != len(nums) {
			t.Fatalf("%d lines gave %d jobs and %d errors", len(nums), len(jobs), len(bad))
		}
		for _, j := range jobs {
			if _, ok := phaseOf(j.State); !ok || !validJobID(j.ID) {
				t.Fatalf("accepted a job with state %q id %q", j.State, j.ID)
			}
		}
		for _, pe := range bad {
			checkParseError(t, pe, "squeue")
		}
	})
}

func FuzzParseSacct(f *testing.F) {
	seedFixtures(f, "sacct_mixed.txt")
	f.Fuzz(func(t *testing.T, out []byte) {
		runs, bad := parseSacct(out)
		nums, _ := lines(out)
		n := 0
		for id, rs := range runs {
			for _, r := range rs {
				if r.JobID != id || r.Elapsed < 0 || r.Alloc.MemoryMiB < 0 {
					t.Fatalf("bad run %+v", r)
				}
			}
			n += len(rs)
		}
		if n+len(bad) != len(nums) {
			t.Fatalf("%d lines gave %d runs and %d errors", len(nums), n, len(bad))
		}
		for _, pe := range bad {
			checkParseError(t, pe, "sacct")
		}
	})
}

func FuzzParseInventory(f *testing.F) {
	seedFixtures(f, "sinfo_busy.txt", "partitions.txt")
	f.Fuzz(func(t *testing.T, out []byte) {
		if _, err := parseSinfoNodes(out); err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("not a ParseError: %v", err)
			}
			checkParseError(t, pe, "sinfo")
		}
		if _, err := parsePartitions(out); err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("not a ParseError: %v", err)
			}
			checkParseError(t, pe, "scontrol show partition")
		}
		_, _ = parseSubmitted(out)
	})
}

func FuzzParseValues(f *testing.F) {
	for _, s := range []string{"1-02:03:04", "UNLIMITED", "1.5G", "gpu:a100:2(IDX:0,1),mps:1", "cpu=2,mem=1G,gres/gpu:a100=2", "0:9", "N/A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseDuration("d", s); err == nil && d < 0 {
			t.Fatalf("negative duration %s from %q", d, s)
		}
		if m, err := parseMemMiB("m", s); err == nil && m < 0 {
			t.Fatalf("negative memory %d from %q", m, s)
		}
		if g, err := parseGPUGres("g", s); err == nil {
			for _, x := range g {
				if x.Count < 0 {
					t.Fatalf("negative count from %q", s)
				}
			}
		}
		_, _ = parseTRES("t", s)
		_, _, _ = parseExitCode("e", s)
		_, _ = keyValues(s)
		_ = classify("sbatch", s)
	})
}

func checkParseError(t *testing.T, pe *ParseError, command string) {
	t.Helper()
	msg := pe.Error()
	if pe.Command != command || !strings.HasPrefix(msg, "cannot parse "+command+" output") || !Transient(pe) {
		t.Fatalf("unclear error for %s: %q", command, msg)
	}
}
