package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// dbArgs are the database flags that point the binary at cfg.
func dbArgs(cfg store.Config) []string {
	if cfg.DatabaseURL != "" {
		return []string{"--database-url", cfg.DatabaseURL}
	}
	return []string{"--data-dir", cfg.DataDir}
}

func TestAuditVerifyCatchesARowEditedBehindItsBack(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			log := audit.New(st, time.Now)
			ctx := audit.WithActor(context.Background(), audit.Actor{Name: "ada", Type: models.ActorUser, IP: "192.0.2.1"})
			for i := range 5 {
				if err := log.Append(ctx, audit.Entry{Action: "job.submitted", ObjectType: "job", ObjectID: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr, code := gantry(t, nil, append([]string{"audit", "verify"}, dbArgs(cfg)...)...)
			if code != 0 || !strings.Contains(out, "audit log intact: 5 events") {
				t.Fatalf("verify an untouched log: exit %d, %s %s", code, out, stderr)
			}
			if b.Name == "postgres" {
				storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_update_delete ON audit_events")
			} else {
				storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_update")
			}
			storetest.Exec(t, cfg, "UPDATE audit_events SET actor = 'someone-else' WHERE id = 3")
			out, stderr, code = gantry(t, nil, append([]string{"audit", "verify"}, dbArgs(cfg)...)...)
			if code != 1 {
				t.Fatalf("verify a tampered log: exit %d, want 1; %s", code, out)
			}
			want := "audit log broken at event 3: its contents do not match its hash: the row was altered (2 events before it verified)"
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); !strings.HasSuffix(lines[len(lines)-1], want) {
				t.Fatalf("stderr = %q, want it to end with %q", stderr, want)
			}
		})
	}
}

// The newest events deleted behind the log's back: the chain still verifies, the head
// that verify printed before does not.
func TestAuditVerifyCatchesACutOffTailWithTheHead(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			log := audit.New(st, time.Now)
			for i := range 5 {
				if err := log.Append(context.Background(), audit.Entry{Action: "job.submitted", ObjectType: "job", ObjectID: fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
			}
			verify := func(args ...string) (string, string, int) {
				return gantry(t, nil, append(append([]string{"audit", "verify"}, args...), dbArgs(cfg)...)...)
			}
			out, stderr, code := verify()
			m := regexp.MustCompile(`(?m)^head: (5:[0-9a-f]{64}) `).FindStringSubmatch(out)
			if code != 0 || m == nil {
				t.Fatalf("verify: exit %d, %q %s; want the head printed as 5:HASH", code, out, stderr)
			}
			head := m[1]
			if out, stderr, code := verify("--expect-head", head); code != 0 || !strings.Contains(out, "every one of 1 anchors holds") {
				t.Fatalf("verify against its own head: exit %d, %q %s", code, out, stderr)
			}

			if b.Name == "postgres" {
				storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_update_delete ON audit_events")
			} else {
				storetest.Exec(t, cfg, "DROP TRIGGER audit_events_refuse_delete")
			}
			storetest.Exec(t, cfg, "DELETE FROM audit_events WHERE id >= 4")
			if out, _, code := verify(); code != 0 || !strings.Contains(out, "audit log intact: 3 events") {
				t.Fatalf("a cut-off tail alone: exit %d %q (the chain verifies: that is what anchors are for)", code, out)
			}
			anchors := filepath.Join(t.TempDir(), "anchors")
			if err := os.WriteFile(anchors, []byte("time=2026-03-01T10:00:00Z level=INFO msg=\"audit anchor\" anchor="+head+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"--expect-head", head}, {"--anchors", anchors}} {
				_, stderr, code := verify(args...)
				want := "audit log broken at event 5: events 4 to 5 are missing: the log ends at event 3, but event 5 was recorded with hash " + head[2:]
				if code != 1 || !strings.Contains(stderr, want) {
					t.Errorf("verify %v after the tail was cut: exit %d, %q; want 1 and %q", args, code, stderr, want)
				}
			}
			for _, c := range []struct {
				args []string
				want string
			}{
				{[]string{"--expect-head", "5"}, `--expect-head: "5" is not an anchor`},
				{[]string{"--anchors", filepath.Join(t.TempDir(), "none")}, "--anchors: open"},
				{[]string{"--anchors", "/dev/null"}, "--anchors /dev/null: no anchor (ID:HASH) in the file"},
			} {
				if _, stderr, code := verify(c.args...); code != 2 || !strings.Contains(stderr, c.want) {
					t.Errorf("verify %v: exit %d %q, want 2 and %q", c.args, code, stderr, c.want)
				}
			}
		})
	}
}

func TestAuditExportWritesFilteredJSONLines(t *testing.T) {
	dir := t.TempDir()
	cfg := store.Config{DataDir: dir}
	st := storetest.Open(t, cfg)
	log := audit.New(st, time.Now)
	for i, actor := range []string{"ada", "bob", "ada"} {
		ctx := audit.WithActor(context.Background(), audit.Actor{Name: actor, Type: models.ActorUser})
		if err := log.Append(ctx, audit.Entry{Action: "token.created", ObjectID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	out, stderr, code := gantry(t, nil, "audit", "export", "--data-dir", dir, "--actor", "ada", "--since", time.Now().UTC().Format(time.DateOnly))
	if code != 0 {
		t.Fatalf("export: exit %d %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("export --actor ada = %q, want 2 lines", out)
	}
	for i, l := range lines {
		var e audit.Line
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Actor != "ada" || e.ID != int64(2*i+1) || len(e.Hash) != 64 {
			t.Errorf("line %d = %q (%v)", i, l, err)
		}
	}
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	out, _, code = gantry(t, nil, "audit", "export", "--data-dir", dir, "--output", file)
	b, err := os.ReadFile(file)
	if code != 0 || err != nil || strings.Count(string(b), "\n") != 3 || !strings.Contains(out, "exported 3 events to "+file) {
		t.Fatalf("export --output: exit %d, %q, file %q %v", code, out, b, err)
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
		t.Errorf("export file mode %v, want 0600: it holds who did what", info.Mode().Perm())
	}
	_, stderr, code = gantry(t, nil, "audit", "export", "--data-dir", dir, "--until", "03/01/2026")
	if code != 2 || !strings.Contains(stderr, `--until: "03/01/2026" is not a date (2026-03-01)`) {
		t.Fatalf("bad --until: exit %d %s", code, stderr)
	}
}

// gantry audit export masks the secret values that an event stored before migration
// 0019 holds in clear, and gantry audit verify still finds the chain intact.
func TestAuditExportMasksOldSecretValues(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			st := storetest.Open(t, cfg)
			ctx := audit.WithActor(context.Background(), audit.Actor{Name: "ada", Type: models.ActorUser})
			// As SaveTemplate appended it before 0019: the spec's env every value a string.
			spec := json.RawMessage(`{"project":"default","name":"train","command":["a"],"env":{"EPOCHS":"3","WANDB_API_KEY":"wk-5521"},"resources":{"gpus":0}}`)
			if err := audit.New(st, time.Now).Append(ctx, audit.Entry{Action: "job_template.saved", ObjectType: "job_template", ObjectID: "1",
				Detail: map[string]any{"name": "nightly", "spec": spec}}); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := gantry(t, nil, append([]string{"audit", "export", "--actor", "ada"}, dbArgs(cfg)...)...)
			var l audit.Line
			if code != 0 || json.Unmarshal([]byte(out), &l) != nil || strings.Contains(out, "wk-5521") || !l.DetailMasked ||
				!strings.Contains(string(l.Detail), `"env":{"EPOCHS":"3","WANDB_API_KEY":"********"}`) {
				t.Fatalf("export: exit %d, %s %s; want WANDB_API_KEY masked", code, out, stderr)
			}
			out, stderr, code = gantry(t, nil, append([]string{"audit", "verify"}, dbArgs(cfg)...)...)
			if code != 0 || !strings.Contains(out, "audit log intact: 1 events") {
				t.Fatalf("verify: exit %d, %s %s", code, out, stderr)
			}
		})
	}
}
