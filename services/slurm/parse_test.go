package slurm

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The files in testdata were recorded from the Slurm 22.05 that scripts/slurm.sh
// starts, with the exact arguments Backend passes (squeueFormat, sacctFormat,
// sinfoFormat); the *_down, *_errors and *_rejections files hold the stderr and exit
// status of each command after "== command".

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sections splits a recorded session into command -> what it printed (rc line dropped).
func sections(t *testing.T, name string) map[string]string {
	out := map[string]string{}
	cur := ""
	for _, l := range strings.Split(string(readFixture(t, name)), "\n") {
		switch {
		case strings.HasPrefix(l, "== "):
			cur = strings.TrimPrefix(l, "== ")
		case strings.HasPrefix(l, "rc="):
		default:
			out[cur] += l + "\n"
		}
	}
	return out
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseSqueueRecorded(t *testing.T) {
	jobs, bad := parseSqueue(readFixture(t, "squeue_mixed.txt"))
	if len(bad) != 0 || len(jobs) != 8 {
		t.Fatalf("got %d jobs, bad %v", len(jobs), bad)
	}
	byID := map[string]Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	want := map[string]Job{
		"4": {ID: "4", Name: "name with | and spaces", State: "RUNNING", Partition: "gpu", QOS: "test", User: "root", Account: "gantry",
			Submit: utc("2026-11-30T00:45:55"), Start: utc("2026-11-30T00:45:55"), End: utc("2026-11-30T00:46:06"), Elapsed: 15 * time.Second,
			NodeList: "node1", Nodes: 1, CPUs: 2, MemoryMiB: 1024, TRES: "gres:gpu:a100:2"},
		"5": {ID: "5", Name: "held", State: "PENDING", Reason: "JobHeldUser", Partition: "gpu", QOS: "normal", User: "root", Account: "gantry",
			Submit: utc("2026-11-30T00:45:55"), Nodes: 1, CPUs: 1, MemoryMiB: 100, Comment: "gantry job 7 attempt 1"},
		"3": {ID: "3", Name: "tmo", State: "RUNNING", Partition: "gpu", QOS: "normal", User: "root", Account: "gantry",
			Submit: utc("2026-11-30T00:45:55"), Start: utc("2026-11-30T00:45:55"), End: utc("2026-11-30T00:46:55"), Elapsed: 15 * time.Second,
			TimeLimit: time.Minute, NodeList: "node1", Nodes: 1, CPUs: 1, MemoryMiB: 100},
		"2": {ID: "2", Name: "fail", State: "FAILED", Reason: "NonZeroExitCode", Partition: "gpu", QOS: "normal", User: "root", Account: "gantry",
			Submit: utc("2026-11-30T00:45:54"), Start: utc("2026-11-30T00:45:55"), End: utc("2026-11-30T00:45:56"), Elapsed: time.Second,
			NodeList: "node1", Nodes: 1, CPUs: 1, MemoryMiB: 100},
	}
	for id, w := range want {
		if got := byID[id]; !reflect.DeepEqual(got, w) {
			t.Errorf("job %s:\n got %+v\nwant %+v", id, got, w)
		}
	}
	later, bad := parseSqueue(readFixture(t, "squeue_later.txt"))
	if len(bad) != 0 || len(later) != 8 {
		t.Fatalf("later: %d jobs, bad %v", len(later), bad)
	}
	for _, j := range later {
		if j.ID == "3" && (j.State != "TIMEOUT" || j.Reason != "TimeLimit" || j.Elapsed != 76*time.Second) {
			t.Errorf("timed-out job: %+v", j)
		}
		if j.ID == "6" && (j.End != time.Time{} || j.Start.Year() != 2027 || j.MemoryMiB != 2048) {
			t.Errorf("pending job with a start estimate: %+v", j)
		}
	}
}

func TestParseSacctRecorded(t *testing.T) {
	runs, bad := parseSacct(readFixture(t, "sacct_mixed.txt"))
	if len(bad) != 0 || len(runs) != 8 {
		t.Fatalf("got %d jobs, bad %v", len(runs), bad)
	}
	preempted := Run{JobID: "4", Name: "name with | and spaces", State: "PREEMPTED", Submit: utc("2026-11-30T00:45:55"),
		Start: utc("2026-11-30T00:45:55"), End: utc("2026-11-30T00:46:11"), Elapsed: 16 * time.Second,
		Alloc:     TRES{CPUs: 2, MemoryMiB: 1024, Nodes: 1, GPUs: 2, GPUsByType: map[string]int{"a100": 2}, Billing: 2},
		Partition: "gpu", QOS: "test", NodeList: "node1", User: "root", Account: "gantry"}
	if got := runs["4"]; len(got) != 2 || !reflect.DeepEqual(got[0], preempted) || got[1].State != "RUNNING" || got[1].Elapsed != 58*time.Second {
		t.Errorf("requeued job, want its preempted run then the running one:\n got %+v", got)
	}
	cases := []struct {
		id, state     string
		exit, elapsed int
		nodes         string
	}{
		{"1", "COMPLETED", 0, 1, "node1"},
		{"2", "FAILED", 3, 1, "node1"},
		{"3", "TIMEOUT", 0, 76, "node1"},
		{"5", "PENDING", 0, 0, ""},
		{"8", "CANCELLED", 0, 0, ""},
	}
	for _, c := range cases {
		r := runs[c.id]
		if len(r) != 1 || r[0].State != c.state || r[0].ExitCode != c.exit || r[0].Elapsed != time.Duration(c.elapsed)*time.Second || r[0].NodeList != c.nodes {
			t.Errorf("job %s: got %+v, want %s exit %d elapsed %ds on %q", c.id, r, c.state, c.exit, c.elapsed, c.nodes)
		}
	}
	if r := runs["1"][0]; r.Alloc.MemoryMiB != 100 || r.Alloc.CPUs != 1 || r.Alloc.GPUs != 0 {
		t.Errorf("CPU-only job's TRES: %+v", r.Alloc)
	}
}

func TestParseInventoryRecorded(t *testing.T) {
	nodes, err := parseSinfoNodes(readFixture(t, "sinfo_busy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{{Name: "node1", Partitions: []string{"gpu", "debug"}, State: "mixed", CPUs: 8, AllocCPUs: 3, MemoryMiB: 8192, AllocMemoryMiB: 1124,
		GPUs: []GRES{{"a100", 2}, {"l4", 2}}, GPUsUsed: []GRES{{"a100", 2}, {"l4", 0}}}}
	if !reflect.DeepEqual(nodes, want) {
		t.Errorf("nodes:\n got %+v\nwant %+v", nodes, want)
	}
	parts, err := parsePartitions(readFixture(t, "partitions.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantParts := []Partition{
		{Name: "gpu", State: "UP", Default: true, Nodes: "node1", TotalCPUs: 8, TotalNodes: 1, GPUs: 4},
		{Name: "debug", State: "UP", MaxTime: time.Hour, Nodes: "node1", TotalCPUs: 8, TotalNodes: 1, GPUs: 4},
	}
	if !reflect.DeepEqual(parts, wantParts) {
		t.Errorf("partitions:\n got %+v\nwant %+v", parts, wantParts)
	}
}

func TestClassifyRecordedErrors(t *testing.T) {
	rejected := map[string]string{
		"sbatch -p nosuch":         "Invalid partition name specified",
		"sbatch --qos=nosuch":      "Invalid qos specification",
		"sbatch --gres=gpu:a100:9": "Requested node configuration is not available",
		"sbatch -p debug -t 120":   "Requested time limit is invalid (missing or exceeds some limit)",
		"sbatch -c 64":             "More processors requested than permitted",
		"scontrol hold 1":          "Job has already finished",
		"scontrol hold 999":        "Invalid job id specified",
	}
	recorded := sections(t, "sbatch_rejections.txt")
	for k, v := range sections(t, "control_errors.txt") {
		recorded[k] = v
	}
	for cmd, reason := range rejected {
		err := classify(cmd, recorded[cmd])
		var re *RejectedError
		if !errors.As(err, &re) || re.Reason != reason || Transient(err) {
			t.Errorf("%s: got %v, want rejected with %q", cmd, err, reason)
		}
	}
	down := sections(t, "ctld_down.txt")
	for k, v := range sections(t, "dbd_down.txt") {
		down[k] = v
	}
	for _, cmd := range []string{"squeue", "sbatch", "sacct (slurmdbd down)"} {
		err := classify(cmd, down[cmd])
		if !errors.Is(err, ErrUnavailable) || !Transient(err) {
			t.Errorf("%s: got %v, want unavailable", cmd, err)
		}
	}
	if err := classify("squeue", down["squeue"]); !strings.Contains(err.Error(), "Unable to contact slurm controller (connect failure)") {
		t.Errorf("the reason should be Slurm's words: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	cases := map[string]time.Duration{
		"0:00": 0, "0:15": 15 * time.Second, "1:16": 76 * time.Second, "01:00:00": time.Hour,
		"1-00:00:00": 24 * time.Hour, "2-03:04:05": 51*time.Hour + 4*time.Minute + 5*time.Second,
		"30": 30 * time.Minute, "1-2": 26 * time.Hour, "1-2:30": 26*time.Hour + 30*time.Minute,
		"UNLIMITED": 0, "INFINITE": 0, "NOT_SET": 0, "N/A": 0, "": 0,
	}
	for in, want := range cases {
		if got, err := parseDuration("f", in); err != nil || got != want {
			t.Errorf("%q: got %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"1:2:3:4", "x", "-1", "1-", "1:-5", "1--2"} {
		if _, err := parseDuration("time_limit", in); err == nil || !strings.Contains(err.Error(), "time_limit") {
			t.Errorf("%q: got %v, want an error naming the field", in, err)
		}
	}
}

func TestParseMemMiB(t *testing.T) {
	cases := map[string]int64{"100M": 100, "1G": 1024, "1024M": 1024, "512": 512, "500K": 1, "2T": 2 << 20, "1.5G": 1536, "4000Mc": 4000, "8Gn": 8192, "0": 0, "N/A": 0}
	for in, want := range cases {
		if got, err := parseMemMiB("f", in); err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"G", "abc", "-5M", "1e300G", "c"} {
		if _, err := parseMemMiB("mem", in); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestParseGPUGres(t *testing.T) {
	cases := map[string][]GRES{
		"gpu:a100:2,gpu:l4:2":                   {{"a100", 2}, {"l4", 2}},
		"gpu:a100:2(IDX:0,2),gpu:l4:0(IDX:N/A)": {{"a100", 2}, {"l4", 0}},
		"gpu:4(S:0-1),mps:100":                  {{"", 4}},
		"gpu:tesla":                             {{"tesla", 1}},
		"gpu":                                   {{"", 1}},
		"(null)":                                nil,
		"mps:200":                               nil,
	}
	for in, want := range cases {
		if got, err := parseGPUGres("gres", in); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"gpu:a:b:c", "gpu:a100:x", "gpu::2"} {
		if _, err := parseGPUGres("gres", in); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestParseTRESAndExitCode(t *testing.T) {
	tres, err := parseTRES("f", "billing=4,cpu=4,energy=100,fs/disk=5,gres/gpu:a100=1,gres/gpu:l4=2,gres/gpu=3,mem=16G,node=2")
	want := TRES{CPUs: 4, MemoryMiB: 16384, Nodes: 2, GPUs: 3, GPUsByType: map[string]int{"a100": 1, "l4": 2}, Billing: 4}
	if err != nil || !reflect.DeepEqual(tres, want) {
		t.Errorf("got %+v, %v", tres, err)
	}
	for _, in := range []string{"cpu", "cpu=x", "=1", "mem=lots"} {
		if _, err := parseTRES("alloc_tres", in); err == nil || !strings.Contains(err.Error(), "alloc_tres") {
			t.Errorf("%q: got %v, want an error naming the field", in, err)
		}
	}
	if c, s, err := parseExitCode("f", "0:9"); err != nil || c != 0 || s != 9 {
		t.Errorf("0:9: %d %d %v", c, s, err)
	}
	for _, in := range []string{"3", "a:b", "300:0", ":"} {
		if _, _, err := parseExitCode("exit_code", in); err == nil {
			t.Errorf("%q: want an error", in)
		}
	}
}

func TestKeyValuesKeepsSpacesInValues(t *testing.T) {
	kv, err := keyValues("NodeName=node1 OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=8192 Reason=Not responding [root@2026-01-01T00:00:00]")
	if err != nil {
		t.Fatal(err)
	}
	if kv["OS"] != "Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0" || kv["RealMemory"] != "8192" || kv["Reason"] != "Not responding [root@2026-01-01T00:00:00]" {
		t.Errorf("got %q", kv)
	}
	if _, err := keyValues("garbage first"); err == nil {
		t.Error("a line not starting with Key=value should fail")
	}
}

func TestParseErrorsNameWhatWasUnparsable(t *testing.T) {
	good := strings.Split(strings.TrimSpace(string(readFixture(t, "squeue_mixed.txt"))), "\n")
	broken := strings.Replace(good[1], "2026-11-30T00:45:55", "yesterday", 1)
	out := []byte(good[0] + "\n" + broken + "\nnot squeue output at all\n" + good[2] + "\n")
	jobs, bad := parseSqueue(out)
	if len(jobs) != 2 || len(bad) != 2 {
		t.Fatalf("want the 2 good lines read and 2 errors, got %d jobs, %v", len(jobs), bad)
	}
	if bad[0].Command != "squeue" || bad[0].Line != 2 || bad[0].Field != "start_time" || bad[0].JobID != "1" || !Transient(bad[0]) {
		t.Errorf("first error: %+v", bad[0])
	}
	if msg := bad[0].Error(); msg != `cannot parse squeue output line 2 field start_time "yesterday": want a time like 2006-01-02T15:04:05` {
		t.Errorf("message: %s", msg)
	}
	if bad[1].Line != 3 || bad[1].JobID != "" || !strings.Contains(bad[1].Error(), "has 1 fields, want 19") {
		t.Errorf("second error: %v", bad[1])
	}
	unknown := strings.Replace(good[0], "CANCELLED", "ZOMBIE", 1)
	if _, bad := parseSqueue([]byte(unknown)); len(bad) != 1 || bad[0].Field != "state" || bad[0].JobID != "8" {
		t.Errorf("an unknown state should be named: %v", bad)
	}
	if _, err := parseSinfoNodes([]byte("node1\x1fgpu\x1fidle\x1f1/2/3\x1f1\x1f0\x1f\x1f\x1fnone")); err == nil ||
		!strings.Contains(err.Error(), "sinfo output line 1 field cpus_state") {
		t.Errorf("sinfo: %v", err)
	}
}

func TestParseSubmitted(t *testing.T) {
	for in, want := range map[string]string{"13\n": "13", "42;gantry\n": "42", "7_1": "7_1"} {
		if got, err := parseSubmitted([]byte(in)); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", "Submitted batch job 13", "13\n14", "_1", "1_"} {
		if _, err := parseSubmitted([]byte(in)); err == nil || !Transient(err) {
			t.Errorf("%q: got %v, want a transient parse error", in, err)
		}
	}
}

// squeue -h -O restartcnt pads the count to the column's width (recorded from 22.05).
func TestParseRestarts(t *testing.T) {
	for in, want := range map[string]int{"0                   \n": 0, "1                   \n": 1, "12\n": 12} {
		if got, err := parseRestarts([]byte(in)); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"", "RESTART_COUNT\n", "1\n1\n", "-1", "+1", "1 2"} {
		if _, err := parseRestarts([]byte(in)); err == nil || !Transient(err) {
			t.Errorf("%q: got %v, want a transient parse error", in, err)
		}
	}
}

func TestParseClusterName(t *testing.T) {
	if got, err := parseClusterName(readFixture(t, "show_config.txt")); err != nil || got != "gantry" {
		t.Errorf("recorded: %q, %v", got, err)
	}
	for _, in := range []string{"", "Configuration data as of 2026-12-01T15:04:50\nClusterName             = (null)\n", "ClusterName = a b\n", "SlurmctldHost = vm\n"} {
		if _, err := parseClusterName([]byte(in)); err == nil || !Transient(err) || !strings.Contains(err.Error(), "scontrol show config") {
			t.Errorf("%q: got %v, want a transient parse error naming scontrol show config", in, err)
		}
	}
}
