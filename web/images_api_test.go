package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// An admin's API token adds an image to the catalog (uncertified) and certifies it, as
// a pipeline that builds images would; bad input is refused naming the field, and
// changes nothing; a member's token is refused.
func TestImagesThroughTheAPI(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := newSite(t, st, false)
		admin, err := st.UserByUsername(t.Context(), "admin")
		if err != nil {
			t.Fatal(err)
		}
		_, ada := s.member("ada")
		adminToken, _, err := s.id.CreateToken(t.Context(), admin, "ci", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		adaToken, _, err := s.id.CreateToken(t.Context(), ada, "cli", identity.ScopeWrite, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		post := func(token, path, body string) (int, string) {
			t.Helper()
			res, out := s.send(s.browser(), "POST", path, body, map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"})
			return res.StatusCode, out
		}
		good := `{"name": "jax-0.4-cuda12", "reference": "ghcr.io/acme/jax:0.4.30@sha256:` + strings.Repeat("ab", 32) + `", "framework": "jax",
			"framework_version": "0.4.30", "cuda_version": "12.4", "min_driver": "550.54", "python_version": "3.11", "size_mib": 9000, "pre_pull": true}`
		status, body := post(adminToken, "/api/v1/images", good)
		var img struct {
			Name, Reference, Digest, Framework, Status string
			SizeMiB                                    int64 `json:"size_mib"`
			PrePull                                    bool  `json:"pre_pull"`
		}
		if err := json.Unmarshal([]byte(body), &img); status != http.StatusCreated || err != nil || img.Name != "jax-0.4-cuda12" || img.Status != "uncertified" ||
			img.Digest != "sha256:"+strings.Repeat("ab", 32) || img.SizeMiB != 9000 || !img.PrePull {
			t.Fatalf("add = %d %s", status, body)
		}
		for _, bad := range []struct{ body, field string }{
			{good, "name"}, // taken
			{`{"name": "Bad Name", "reference": "ghcr.io/x:1", "framework": "jax"}`, "name"},
			{`{"name": "x", "reference": "ghcr.io/x:1", "framework": "torch"}`, "framework"},
			{`{"name": "x", "reference": "ghcr.io/x:1", "framework": "jax", "cuda_version": "twelve"}`, "cuda_version"},
			{`{"name": "x", "reference": "ghcr.io/x:1", "framework": "jax", "size_mib": -1}`, "size_mib"},
			{`{"name": "x", "reference": "ghcr.io/x:1", "framework": "jax", "colour": "red"}`, "colour"},
			{`{"name": "x", "reference": "ghcr.io/x:1", "framework": "jax", "pre_pull": "yes"}`, "pre_pull"},
			{``, "body"},
		} {
			if status, body := post(adminToken, "/api/v1/images", bad.body); status != http.StatusBadRequest || !strings.Contains(body, `"field":"`+bad.field+`"`) {
				t.Errorf("add %s = %d %s; want 400 naming %s", bad.body, status, body, bad.field)
			}
		}
		if imgs, err := st.Images(t.Context()); err != nil || len(imgs) != 2 { // plain-command and jax
			t.Errorf("after the refusals the catalog holds %d images, %v; want 2", len(imgs), err)
		}
		if status, body := post(adaToken, "/api/v1/images", `{"name": "mine", "reference": "ghcr.io/x:1", "framework": "jax"}`); status != http.StatusForbidden {
			t.Errorf("a member adds an image: %d %s", status, body)
		}

		if status, body := post(adminToken, "/api/v1/images/jax-0.4-cuda12/status", `{"status": "certified"}`); status != http.StatusOK || !strings.Contains(body, `"status":"certified"`) {
			t.Errorf("certify = %d %s", status, body)
		}
		for _, bad := range []struct {
			path, body, field string
			status            int
		}{
			{"/api/v1/images/jax-0.4-cuda12/status", `{"status": "blessed"}`, "status", http.StatusBadRequest},
			{"/api/v1/images/no-such/status", `{"status": "certified"}`, "image", http.StatusNotFound},
		} {
			if status, body := post(adminToken, bad.path, bad.body); status != bad.status || !strings.Contains(body, `"field":"`+bad.field+`"`) {
				t.Errorf("POST %s %s = %d %s; want %d naming %s", bad.path, bad.body, status, body, bad.status, bad.field)
			}
		}
		if got, err := st.ImageByName(t.Context(), "jax-0.4-cuda12"); err != nil || got.Status != "certified" {
			t.Errorf("the image is %+v, %v; want certified", got, err)
		}
	})
}
