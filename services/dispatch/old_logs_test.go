package dispatch_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// The output of jobs submitted before migration 0020 was stored with their secret
// values in clear. The migration after it lists those jobs (submitted before 0020, with
// secrets and output), and MaskOldLogs masks their output a batch of chunks at a time:
// values inside a chunk, split between chunks, between batches, and longer than a whole
// batch of small chunks; a stream that ends in the beginning of a value keeps it masked
// and in clear as its tail, so a chunk that comes late is masked as AppendLog would.
// A job still running is masked at once and again once it ended; jobs submitted since
// 0020 and jobs without secrets are left alone.
func TestMaskOldLogs(t *testing.T) {
	t.Parallel()
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			e := newEnv(t, st, dispatchtest.FirstFit{})
			n := e.join("gpu-1", "4xA100-80GB")
			long := strings.Repeat("Z9", 70) // longer than a batch of one-byte chunks
			jobs := map[string]*models.Job{}
			for _, name := range []string{"old", "running", "recent", "no-secret"} {
				jobs[name] = e.submit(name, 1)
			}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(st.SetJobSecretEnv(e.ctx, jobs["old"].ID, map[string]string{"HF_TOKEN": "hf_old-secret-77", "DB_PASSWORD": long, "EMPTY_KEY": ""}))
			must(st.SetJobSecretEnv(e.ctx, jobs["running"].ID, map[string]string{"HF_TOKEN": "hf_run-5"}))
			must(st.SetJobSecretEnv(e.ctx, jobs["recent"].ID, map[string]string{"HF_TOKEN": "hf_recent-1"}))
			e.svc.Tick(e.ctx)
			refs := map[string]agentapi.AttemptRef{}
			for _, l := range e.leases(n).Allocations {
				e.mustReport(n, l.AttemptRef, agentapi.EventStarted, nil)
				refs[e.job(l.JobID).Name] = l.AttemptRef
			}
			if len(refs) != 4 {
				t.Fatalf("leases for %v, want the 4 jobs", refs)
			}
			// Output stored as it was before 0020: in clear.
			write := func(name, stream string, offset int64, data string) {
				t.Helper()
				must(st.CreateLogChunk(e.ctx, &models.JobLogChunk{JobID: jobs[name].ID, Attempt: 1, Stream: stream, Offset: offset, Data: []byte(data)}))
			}
			line := "token hf_old-secret-77, near hf_old-secret-7! pw " + long + " ok\n"
			masked := "token ****************, near hf_old-secret-7! pw " + strings.Repeat("*", len(long)) + " ok\n"
			text := strings.Repeat(line, 12) + "bye hf_old"
			want := strings.Repeat(masked, 12) + "bye ******"
			// 300 chunks of one byte (no batch holds a whole value of DB_PASSWORD), then
			// chunks of 1 to 7 bytes, so that values fall across every kind of boundary.
			for at, i := 0, 0; at < len(text); i++ {
				size := 1
				if i >= 300 {
					size = i%7 + 1
				}
				size = min(size, len(text)-at)
				write("old", "stdout", int64(at), text[at:at+size])
				at += size
			}
			write("old", "stderr", 0, "error: hf_old-sec")
			write("old", "stderr", 17, "ret-77 refused\n")
			write("running", "stdout", 0, "using hf_run-5\n")
			write("recent", "stdout", 0, "using hf_recent-1\n")
			write("no-secret", "stdout", 0, "using hf_none\n")
			e.mustReport(n, refs["old"], agentapi.EventExited, code(0))
			e.mustReport(n, refs["recent"], agentapi.EventExited, code(0))
			e.mustReport(n, refs["no-secret"], agentapi.EventExited, code(0))

			// As the database was before the migration: the jobs but "recent" from before 0020.
			storetest.Exec(t, cfg, "UPDATE jobs SET created_at = '2020-01-01 00:00:00+00:00' WHERE name <> 'recent'")
			storetest.Exec(t, cfg, "DROP TABLE job_logs_unmasked")
			storetest.Exec(t, cfg, "DELETE FROM schema_migrations WHERE name = 'job_logs_unmasked'")
			if applied, err := st.Migrate(e.ctx); err != nil || len(applied) != 1 {
				t.Fatalf("migrate applied %v, %v; want the one migration", applied, err)
			}
			listed := func() map[int64]*time.Time {
				t.Helper()
				rows, err := st.UnmaskedJobLogs(e.ctx)
				must(err)
				out := map[int64]*time.Time{}
				for _, r := range rows {
					out[r.JobID] = r.SweptAt
				}
				return out
			}
			if got := listed(); len(got) != 2 || !has(got, jobs["old"].ID) || !has(got, jobs["running"].ID) {
				t.Fatalf("listed jobs %v, want old %d and running %d", got, jobs["old"].ID, jobs["running"].ID)
			}

			left, err := e.svc.MaskOldLogsOnce(e.ctx)
			if err != nil || left != 1 {
				t.Fatalf("the first round left %d, %v; want the running job", left, err)
			}
			if got := output(t, st, jobs["old"].ID, "stdout"); got != want {
				for k := range want {
					if got[k] != want[k] {
						t.Fatalf("old stdout differs from %d on: %q, want %q", k, got[k:min(len(got), k+40)], want[k:min(len(want), k+40)])
					}
				}
				t.Fatalf("old stdout = %q, want %q", got, want)
			}
			if got := output(t, st, jobs["old"].ID, "stderr"); got != "error: **************** refused\n" {
				t.Errorf("old stderr = %q", got)
			}
			tail, err := st.LogTail(e.ctx, jobs["old"].ID, 1, 0, "stdout")
			if err != nil || tail.Offset != int64(len(text)-6) || string(tail.Data) != "hf_old" {
				t.Errorf("old stdout's tail = %+v, %v; want hf_old at %d", tail, err, len(text)-6)
			}
			if _, err := st.LogTail(e.ctx, jobs["old"].ID, 1, 0, "stderr"); err == nil {
				t.Error("old stderr, which ends in no value, keeps a tail")
			}
			if got := output(t, st, jobs["running"].ID, "stdout"); got != "using ********\n" {
				t.Errorf("running stdout = %q", got)
			}
			for name, want := range map[string]string{"recent": "using hf_recent-1\n", "no-secret": "using hf_none\n"} {
				if got := output(t, st, jobs[name].ID, "stdout"); got != want {
					t.Errorf("%s stdout = %q, want it as it was: %q", name, got, want)
				}
			}
			if got := listed(); len(got) != 1 || got[jobs["running"].ID] == nil {
				t.Fatalf("listed after the first round: %v, want only the running job, marked swept", got)
			}

			// A late chunk of the old job completes the value its stream ended with.
			ack, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: refs["old"], Stream: "stdout", Offset: int64(len(text)), Data: []byte("-secret-77\n")})
			if err != nil || ack.NextOffset != int64(len(text)+11) {
				t.Fatalf("late append = %+v, %v", ack, err)
			}
			if got := output(t, st, jobs["old"].ID, "stdout"); got != want+"**********\n" {
				t.Errorf("old stdout after a late chunk ends %q", got[len(got)-30:])
			}

			// While it runs, the running job is not read again; once it ended it is.
			write("running", "stdout", 15, "again hf_run")
			write("running", "stdout", 27, "-5\n")
			if left, err := e.svc.MaskOldLogsOnce(e.ctx); err != nil || left != 1 {
				t.Fatalf("a round while it runs left %d, %v", left, err)
			}
			if got := output(t, st, jobs["running"].ID, "stdout"); got != "using ********\nagain hf_run-5\n" {
				t.Errorf("running stdout read again while it runs: %q", got)
			}
			e.mustReport(n, refs["running"], agentapi.EventExited, code(0))
			if left, err := e.svc.MaskOldLogsOnce(e.ctx); err != nil || left != 0 {
				t.Fatalf("the round after it ended left %d, %v", left, err)
			}
			if got := output(t, st, jobs["running"].ID, "stdout"); got != "using ********\nagain ********\n" {
				t.Errorf("running stdout once ended = %q", got)
			}
			if got := listed(); len(got) != 0 {
				t.Errorf("listed once done: %v", got)
			}
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel()
			e.svc.MaskOldLogs(ctx, time.Hour) // returns at once: nothing left

			masks := map[string]int{}
			events, err := st.AuditEventsAfter(e.ctx, store.AuditFilter{}, 0, 1000)
			must(err)
			for _, ev := range events {
				for _, v := range []string{"hf_old", "hf_run", long} {
					if strings.Contains(ev.Detail, v) {
						t.Errorf("audit event %s holds a secret value: %s", ev.Action, ev.Detail)
					}
				}
				if ev.Action == "job.output_masked" {
					masks[ev.ObjectID]++
				}
			}
			if masks[strconv.FormatInt(jobs["old"].ID, 10)] != 1 || masks[strconv.FormatInt(jobs["running"].ID, 10)] != 2 || len(masks) != 2 {
				t.Errorf("job.output_masked events by job: %v; want one for old %d, two for running %d", masks, jobs["old"].ID, jobs["running"].ID)
			}
		})
	}
}

func has(m map[int64]*time.Time, id int64) bool {
	_, ok := m[id]
	return ok
}

// output is what is stored of one stream of attempt 1 of a job.
func output(t *testing.T, st *store.Store, jobID int64, stream string) string {
	t.Helper()
	var b bytes.Buffer
	for after := int64(0); ; {
		chunks, err := st.LogChunks(context.Background(), store.LogFilter{JobID: jobID, Attempt: 1, Stream: stream, AfterID: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(chunks) == 0 {
			return b.String()
		}
		for _, c := range chunks {
			b.Write(c.Data)
			after = c.ID
		}
	}
}
