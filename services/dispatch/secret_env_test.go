package dispatch_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/agentapi"
	"github.com/gantry-gpu/gantry/services/dispatch/dispatchtest"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A job's secret variables reach its lease apart from its plain ones, and its output
// is stored with their values masked, its offsets unchanged.
func TestSecretEnvInLeasesAndLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xA100-80GB")
		j := e.submit("train", 1)
		if err := st.SetJobSecretEnv(e.ctx, j.ID, map[string]string{"HF_TOKEN": "hf_abc", "DB_PASSWORD": "hunter2hunter2"}); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobScheduled)
		ls := e.leases(n)
		if len(ls.Allocations) != 1 {
			t.Fatalf("leases = %+v", ls)
		}
		l := ls.Allocations[0]
		if l.Env["EPOCHS"] != "3" || len(l.Env) != 1 || l.SecretEnv["HF_TOKEN"] != "hf_abc" || l.SecretEnv["DB_PASSWORD"] != "hunter2hunter2" {
			t.Fatalf("lease env %v, secret env %v", l.Env, l.SecretEnv)
		}
		e.mustReport(n, l.AttemptRef, agentapi.EventStarted, nil)
		line := "login hf_abc with hunter2hunter2 (not hunter2)\n"
		ack, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: l.AttemptRef, Stream: "stdout", Data: []byte(line)})
		if err != nil || ack.NextOffset != int64(len(line)) {
			t.Fatalf("append = %+v, %v", ack, err)
		}
		chunks, err := st.LogChunks(e.ctx, store.LogFilter{JobID: j.ID, Attempt: 1, Stream: "stdout"})
		if err != nil || len(chunks) != 1 {
			t.Fatalf("chunks = %v, %v", chunks, err)
		}
		if got, want := string(chunks[0].Data), "login ****** with ************** (not hunter2)\n"; got != want || strings.Contains(got, "hf_abc") {
			t.Errorf("stored output %q, want %q", got, want)
		}
	})
}

// A secret value split between two chunks is masked, wherever the split falls: the
// output is chunked so that each copy of a line is split at another position, and no
// byte of a value is ever stored in clear, not even while the rest of it has not come.
// What only began like a value is written back once the next chunk shows it is not one;
// a stream that ends in the beginning of a value keeps it masked.
func TestSecretSplitBetweenChunksIsMasked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xA100-80GB")
		j := e.submit("train", 1)
		// The second value overlaps itself, so that a partial match must fall back.
		secrets := map[string]string{"HF_TOKEN": "hf_split-secret-33", "DB_PASSWORD": "ababac9"}
		if err := st.SetJobSecretEnv(e.ctx, j.ID, secrets); err != nil {
			t.Fatal(err)
		}
		e.svc.Tick(e.ctx)
		e.wantState(j.ID, models.JobScheduled)
		l := e.leases(n).Allocations[0]
		e.mustReport(n, l.AttemptRef, agentapi.EventStarted, nil)

		line := "token hf_split-secret-33, near hf_split-secret-3! pw abababac9 abab\n"
		masked := "token ******************, near hf_split-secret-3! pw ab******* abab\n"
		text, want := strings.Repeat(line, len(line)), strings.Repeat(masked, len(line))
		end := "bye hf_split"
		text, want = text+end, want+"bye ********"
		var cuts []int
		for i := range len(line) {
			cuts = append(cuts, i*len(line)+i)
		}
		cuts = append(cuts, len(line)*len(line), len(text))
		stored := func() string {
			t.Helper()
			var b bytes.Buffer
			for after := int64(0); ; {
				chunks, err := st.LogChunks(e.ctx, store.LogFilter{JobID: j.ID, Attempt: 1, Stream: "stdout", AfterID: after})
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
		for i := 1; i < len(cuts); i++ {
			chunk := text[cuts[i-1]:cuts[i]]
			ack, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: l.AttemptRef, Stream: "stdout", Offset: int64(cuts[i-1]), Data: []byte(chunk)})
			if err != nil || ack.NextOffset != int64(cuts[i]) {
				t.Fatalf("append %q at %d = %+v, %v", chunk, cuts[i-1], ack, err)
			}
			got := stored()
			if len(got) != cuts[i] {
				t.Fatalf("after the chunk at %d %d bytes are stored, want %d", cuts[i-1], len(got), cuts[i])
			}
			for k := range got {
				if want[k] == '*' && got[k] != '*' {
					t.Fatalf("after the chunk at %d the output shows byte %d of a secret value: %q", cuts[i-1], k, got[max(0, k-20):k+1])
				}
			}
		}
		if got := stored(); got != want {
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("stored output differs from %d on: %q, want %q", k, got[k:min(len(got), k+40)], want[k:min(len(want), k+40)])
				}
			}
		}
	})
}

// A node agent's words on how an attempt ended (a container runtime's error quoting
// the job's environment) are stored with the job's secret values masked, as written,
// as Go quotes them, and where the agent cut the text short inside one: in the job's
// events and in the audit event of its end, for every retry.
func TestSecretsInAgentMessagesAreMasked(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, dispatchtest.FirstFit{})
		n := e.join("gpu-1", "1xA100-80GB")
		j := e.submit("train", 1, func(j *models.Job) { j.MaxRetries = 1 })
		secrets := map[string]string{"HF_TOKEN": "hf_agentsecret-41", "DB_PASSWORD": `pw"agent-42`}
		if err := st.SetJobSecretEnv(e.ctx, j.ID, secrets); err != nil {
			t.Fatal(err)
		}
		says := `the container runtime could not run the job: invalid env HF_TOKEN=hf_agentsecret-41, "DB_PASSWORD=pw\"agent-42" and HF_TOKEN=hf_agent…`
		for attempt := 1; attempt <= 2; attempt++ {
			e.svc.Tick(e.ctx)
			ref := agentapi.AttemptRef{JobID: j.ID, Attempt: attempt}
			e.mustReport(n, ref, agentapi.EventStarted, nil)
			if err := e.svc.Report(e.ctx, n.Node, agentapi.Report{AttemptRef: ref, Event: agentapi.EventExited, ExitCode: code(125), Message: says}); err != nil {
				t.Fatal(err)
			}
		}
		e.wantState(j.ID, models.JobFailed)
		masked := `(the container runtime could not run the job: invalid env HF_TOKEN=********, "DB_PASSWORD=********" and HF_TOKEN=********…)`
		evs, err := st.JobEvents(e.ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, ev := range evs {
			msgs = append(msgs, ev.Message)
		}
		audits, err := st.AuditEventsAfter(e.ctx, store.AuditFilter{}, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var details []string
		for _, a := range audits {
			if a.Action == "job.requeued" || a.Action == "job.failed" {
				details = append(details, a.Detail)
			}
		}
		for what, texts := range map[string][]string{"events": msgs, "audit details": details} {
			joined := strings.Join(texts, "|")
			if strings.Contains(joined, "agentsecret") || strings.Contains(joined, "agent-42") || strings.Contains(joined, "hf_agent…") {
				t.Errorf("%s show a secret value: %s", what, joined)
			}
		}
		joined := strings.Join(msgs, "|")
		for _, want := range []string{"attempt 1 exited with code 125 " + masked + "; retry 1 of 1", "attempt 2 exited with code 125 " + masked + "; its one retry used"} {
			if !strings.Contains(joined, want) {
				t.Errorf("events lack %q: %v", want, msgs)
			}
		}
		if len(details) != 2 || !strings.Contains(details[1], "HF_TOKEN=********") {
			t.Errorf("audit details of the ends: %v", details)
		}
	})
}
