package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/store"
)

// The export form of a detail: the value of each secret variable of an "env" object
// masked, as a submission decides what is secret; everything else byte for byte.
func TestLineOfMasksSecretEnvValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, detail, want string }{
		{"a template's spec, saved before 0019",
			`{"name":"nightly","spec":{"project":"detect","env":{"DB_PASSWORD":"pw \"q\" \u003c","EPOCHS":"3","HF_TOKEN":"hf_123","TOKENIZER":"bpe"}}}`,
			`{"name":"nightly","spec":{"project":"detect","env":{"DB_PASSWORD":"********","EPOCHS":"3","HF_TOKEN":"********","TOKENIZER":"bpe"}}}`},
		{"marked secret, marked not secret, unmarked object",
			`{"env":{"DB_URL":{"value":"pg://u:pw@db","secret":true},"PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false},"WANDB_API_KEY":{"value":"w-1"},"SEED":{"value":"7"}}}`,
			`{"env":{"DB_URL":{"value":"********","secret":true},"PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false},"WANDB_API_KEY":{"value":"********"},"SEED":{"value":"7"}}}`},
		{"secret marked before its value, or marked with no boolean",
			`{"env":{"A":{"secret":true,"value":"a-1"},"B":{"value":"b-1","secret":"no"}}}`,
			`{"env":{"A":{"secret":true,"value":"********"},"B":{"value":"********","secret":"no"}}}`},
		{"empty values hide nothing",
			`{"env":{"HF_TOKEN":"","DB_URL":{"value":"","secret":true}}}`,
			`{"env":{"HF_TOKEN":"","DB_URL":{"value":"","secret":true}}}`},
		{"spaced out, in an array, key spelt with escapes",
			"{ \"specs\" : [ { \"\\u0065nv\" :\n\t{ \"X_TOKEN\" : \"x-1\" , \"Y\" : \"y\" } } ] }",
			"{ \"specs\" : [ { \"\\u0065nv\" :\n\t{ \"X_TOKEN\" : \"********\" , \"Y\" : \"y\" } } ] }"},
	} {
		l := audit.LineOf(&models.AuditEvent{Action: "job_template.saved", Detail: c.detail})
		if string(l.Detail) != c.want || l.DetailMasked != (c.want != c.detail) {
			t.Errorf("%s: detail %s (masked %v), want %s", c.name, l.Detail, l.DetailMasked, c.want)
		}
	}
	for _, detail := range []string{
		`{"HF_TOKEN":"not under env","environment":{"HF_TOKEN":"x"}}`,
		`{"env":"production","reason":"drain","message":"HF_TOKEN=abc"}`,
		`{"env":["HF_TOKEN","x"]}`,
		`{"gpus":2,"note":"h\u00e9llo \u003cb\u003e"}`,
		``,
	} {
		if l := audit.LineOf(&models.AuditEvent{Action: "x", Detail: detail}); string(l.Detail) != detail || l.DetailMasked {
			t.Errorf("detail %s exported as %s (masked %v), want it as it is", detail, l.Detail, l.DetailMasked)
		}
	}
	if l := audit.LineOf(&models.AuditEvent{Action: "x", Detail: `env: {"HF_TOKEN": "x"`}); string(l.Detail) != `"env: {\"HF_TOKEN\": \"x\""` {
		t.Errorf("a detail that is not JSON exported as %s, want it as a JSON string", l.Detail)
	}
}

// An event stored the old way (a template's spec with its secrets in clear, as
// SaveTemplate appended it before migration 0019) is shown masked by every reader, while
// the chain verifies on the bytes stored.
func TestOldSecretsAreShownMaskedAndStillVerify(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, _ store.Config, st *store.Store) {
		ctx := context.Background()
		log := audit.New(st, newClock().now)
		p := int64(1)
		oldSpec := json.RawMessage(`{"project":"detect","name":"train","command":["python","train.py"],` +
			`"env":{"EPOCHS":"3","HF_TOKEN":"hf_old-4471","PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false}},"resources":{"gpus":1}}`)
		for _, e := range []audit.Entry{
			{Action: "job_template.saved", ObjectType: "job_template", ObjectID: "1", ProjectID: &p, Detail: map[string]any{"name": "nightly", "spec": oldSpec}},
			{Action: "job.submitted", ObjectType: "job", ObjectID: "1", ProjectID: &p, Detail: map[string]any{"name": "train", "gpus": 1}},
			{Action: "job_template.deleted", ObjectType: "job_template", ObjectID: "1", ProjectID: &p, Detail: map[string]any{"name": "nightly", "spec": oldSpec}},
		} {
			if err := log.Append(as("ada"), e); err != nil {
				t.Fatal(err)
			}
		}
		stored, err := st.AuditEventsAfter(ctx, store.AuditFilter{}, 0, 10)
		if err != nil || len(stored) != 3 || !strings.Contains(stored[0].Detail, "hf_old-4471") {
			t.Fatalf("stored %+v, %v", stored, err)
		}
		want := strings.Replace(stored[0].Detail, `"hf_old-4471"`, `"********"`, 1)

		page, err := log.Events(ctx, store.AuditFilter{}, 0, 10)
		if err != nil || len(page.Events) != 3 {
			t.Fatalf("events = %+v, %v", page, err)
		}
		for i, e := range page.Events {
			s := stored[len(stored)-1-i]
			switch {
			case e.Action == "job.submitted" && e.Detail != s.Detail:
				t.Errorf("a detail without env is shown as %s, want %s", e.Detail, s.Detail)
			case e.Action != "job.submitted" && e.Detail != want:
				t.Errorf("%s is shown as %s, want %s", e.Action, e.Detail, want)
			}
			if e.Hash != s.Hash {
				t.Errorf("event %d is shown with hash %s, want the stored %s", e.ID, e.Hash, s.Hash)
			}
		}

		var out bytes.Buffer
		if n, err := log.Export(ctx, &out, store.AuditFilter{}); err != nil || n != 3 {
			t.Fatalf("export = %d, %v", n, err)
		}
		if strings.Contains(out.String(), "hf_old-4471") || !strings.Contains(out.String(), `"PUBLIC_KEY":{"value":"ssh-ed25519 AAA","secret":false}`) {
			t.Errorf("export = %s, want HF_TOKEN masked and PUBLIC_KEY as it is", out.String())
		}
		for i, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var l audit.Line
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			if masked := l.Action != "job.submitted"; l.DetailMasked != masked || l.Hash != stored[i].Hash {
				t.Errorf("exported line %s: masked %v, want %v, and the stored hash %s", line, l.DetailMasked, masked, stored[i].Hash)
			}
		}

		r, err := log.Verify(ctx)
		if err != nil || r.Events != 3 || r.Head != stored[2].Hash {
			t.Fatalf("verify = %+v, %v; want the 3 stored events intact", r, err)
		}
		// The detail shown would not verify: Verify must be reading the stored one.
		shown := stored[0]
		shown.Detail = want
		if audit.Hash(&shown) == stored[0].Hash {
			t.Fatal("the masked detail hashes as the stored one")
		}
	})
}
