package handlers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

// A job that requires NVLink says so in its answers, as submitted and as read again.
func TestJobAPIKeepsNVLink(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		user := submitter(t, st, &models.Project{Name: "default"})
		srv := jobAPI(t, st, user, &kicks{})
		res, err := http.Post(srv.URL+"/api/v1/jobs", "application/json",
			strings.NewReader(`{"project": "default", "name": "n", "command": ["a"], "resources": {"gpus": 2, "nvlink": true}}`))
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			ID        int64
			Resources struct{ NVLink bool }
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if err := json.Unmarshal(body, &created); err != nil || res.StatusCode != http.StatusCreated || !created.Resources.NVLink {
			t.Fatalf("submit = %d %s", res.StatusCode, body)
		}
		res, err = http.Get(srv.URL + "/api/v1/jobs/" + strconv.FormatInt(created.ID, 10))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(body), `"mig_profile":"","nvlink":true,"cpu_milli"`) {
			t.Errorf("GET = %s, want resources with nvlink true", body)
		}
	})
}
