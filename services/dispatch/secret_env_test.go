package dispatch_test

import (
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
		next, err := e.svc.AppendLog(e.ctx, n.Node, agentapi.LogChunk{AttemptRef: l.AttemptRef, Stream: "stdout", Data: []byte(line)})
		if err != nil || next != int64(len(line)) {
			t.Fatalf("append = %d, %v", next, err)
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
