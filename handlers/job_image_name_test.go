package handlers_test

import (
	"context"
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

// A job's answer names its catalog image as a submission does, next to the reference
// it runs: a job of an entry without a reference (plain-command) is not left unnamed,
// and one of a custom reference has no name.
func TestJobAPINamesItsCatalogImage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		plain := &models.Image{Name: "plain-command", Status: models.ImageCertified, Builtin: true}
		torch := &models.Image{Name: "pytorch-2.4", Reference: "nvcr.io/nvidia/pytorch:24.05-py3", Status: models.ImageCertified}
		for _, img := range []*models.Image{plain, torch} {
			if err := st.CreateImage(ctx, img); err != nil {
				t.Fatal(err)
			}
		}
		user := submitter(t, st, &models.Project{Name: "default", DefaultImageID: &plain.ID, AllowCustomImages: true})
		srv := jobAPI(t, st, user, &kicks{})
		type answer struct {
			ID        int64
			Image     string
			ImageName *string `json:"image_name"`
		}
		read := func(want int, res *http.Response, err error) answer {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			var a answer
			if err := json.Unmarshal(body, &a); err != nil || res.StatusCode != want {
				t.Fatalf("%s %s = %d %s", res.Request.Method, res.Request.URL.Path, res.StatusCode, body)
			}
			return a
		}
		for _, tc := range []struct{ image, wantRef, wantName string }{
			{"", "", "plain-command"},
			{`, "image": "pytorch-2.4"`, torch.Reference, "pytorch-2.4"},
			{`, "image": "ghcr.io/ada/mine:1"`, "ghcr.io/ada/mine:1", ""},
		} {
			res, err := http.Post(srv.URL+"/api/v1/jobs", "application/json",
				strings.NewReader(`{"project": "default", "name": "n", "command": ["a"]`+tc.image+`}`))
			created := read(http.StatusCreated, res, err)
			res, err = http.Get(srv.URL + "/api/v1/jobs/" + strconv.FormatInt(created.ID, 10))
			shown := read(http.StatusOK, res, err)
			for what, got := range map[string]answer{"submit": created, "get": shown} {
				name := ""
				if got.ImageName != nil {
					name = *got.ImageName
				}
				if got.Image != tc.wantRef || name != tc.wantName || got.ImageName != nil && name == "" {
					t.Errorf("%s of a job with%s: image %q, image_name %v; want %q and %q", what, tc.image, got.Image, got.ImageName, tc.wantRef, tc.wantName)
				}
			}
		}
	})
}
