package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/identity"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/store/storetest"
)

func TestImagesCatalogThroughThePages(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	admin := s.signIn("admin", s.password)
	ada, adaUser := s.member("ada")

	token := s.csrf(admin, "/images")
	add := url.Values{"csrf_token": {token}, "name": {"pytorch-2.5-cuda12.4"}, "reference": {"nvcr.io/NVIDIA/pytorch:24.10-py3"},
		"framework": {"pytorch"}, "framework_version": {"2.5.0"}, "cuda_version": {"12.4"}, "python_version": {"3.10"}}
	res, body := s.send(admin, "POST", "/admin/images", add.Encode(), nil)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Reference: repository part") || !strings.Contains(body, `value="pytorch-2.5-cuda12.4"`) {
		t.Fatalf("bad reference = %d; want 400 naming the reference with the form kept", res.StatusCode)
	}
	add.Set("reference", "nvcr.io/nvidia/pytorch:24.10-py3")
	if res, _ = s.send(admin, "POST", "/admin/images", add.Encode(), nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("add = %d", res.StatusCode)
	}
	certify := url.Values{"csrf_token": {token}, "status": {"certified"}}
	if res, _ = s.send(admin, "POST", "/admin/images/pytorch-2.5-cuda12.4/status", certify.Encode(), nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("certify = %d", res.StatusCode)
	}
	if res, _ = s.send(admin, "POST", "/admin/images/no-such/status", certify.Encode(), nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("certify a missing image = %d, want 404", res.StatusCode)
	}

	res, body = s.send(ada, "GET", "/images?q=pytorch", "", nil)
	if res.StatusCode != 200 || !strings.Contains(body, "pytorch-2.5-cuda12.4") || !strings.Contains(body, "badge-certified") {
		t.Fatalf("catalog for a user = %d", res.StatusCode)
	}
	if strings.Contains(body, "Add an image") {
		t.Error("a user sees the admin's add form")
	}
	adaToken := s.csrf(ada, "/feedback")
	res, _ = s.send(ada, "POST", "/admin/images", url.Values{"csrf_token": {adaToken}, "name": {"mine"}, "reference": {"x"}, "framework": {"jax"}}.Encode(), nil)
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("a user adding an image = %d, want 403", res.StatusCode)
	}

	secret, _, err := s.id.CreateToken(t.Context(), adaUser, "cli", identity.ScopeRead, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	res, body = s.send(s.browser(), "GET", "/api/v1/images?status=certified&q=pytorch", "", map[string]string{"Authorization": "Bearer " + secret})
	var out struct {
		Images []struct{ Name, Status, Reference string }
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || res.StatusCode != 200 || len(out.Images) != 1 || out.Images[0].Name != "pytorch-2.5-cuda12.4" {
		t.Fatalf("API catalog = %d %s", res.StatusCode, body)
	}

	// A framework or status no image can have is refused, naming the field, not
	// answered with an empty catalog.
	for q, field := range map[string]string{"status=certifed": "status", "framework=torch&q=pytorch": "framework"} {
		res, body = s.send(s.browser(), "GET", "/api/v1/images?"+q, "", map[string]string{"Authorization": "Bearer " + secret})
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"field":"`+field+`"`) || !strings.Contains(body, "one of") {
			t.Errorf("API catalog ?%s = %d %s, want 400 naming %s", q, res.StatusCode, body, field)
		}
		res, body = s.send(ada, "GET", "/images?"+q, "", nil)
		marked := regexp.MustCompile(`<select\s+id="` + field + `"\s+name="` + field + `"\s+aria-invalid="true"`)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, `role="alert">`+strings.ToUpper(field[:1])+field[1:]+":") ||
			!marked.MatchString(body) || strings.Contains(body, "pytorch-2.5-cuda12.4") {
			t.Errorf("catalog page ?%s = %d; want 400 with %s marked and no results", q, res.StatusCode, field)
		}
	}
}

// The catalog says which nodes hold each image, as their agents reported.
func TestImagesPageSaysWhereAnImageIsPulled(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ada, _ := s.member("ada")
	ctx := t.Context()
	torch := &models.Image{Name: "torch-pulled", Reference: "reg.example/torch:2", Status: models.ImageCertified, PrePull: true}
	jax := &models.Image{Name: "jax-nowhere", Reference: "reg.example/jax:1", Status: models.ImageCertified}
	for _, img := range []*models.Image{torch, jax} {
		if err := st.CreateImage(ctx, img); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"box-2", "box-1"} {
		n := &models.Node{Name: name, State: models.NodeReady, Runtime: "podman"}
		if err := st.CreateNode(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
		if err := st.ReplaceNodeImages(ctx, n.ID, []int64{torch.ID}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	res, body := s.send(ada, "GET", "/images", "", nil)
	if res.StatusCode != 200 {
		t.Fatalf("catalog = %d", res.StatusCode)
	}
	cells := regexp.MustCompile(`(?s)<td data-testid="pulled-on">(.*?)</td>`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, c := range cells {
		got = append(got, strings.Join(strings.Fields(c[1]), " "))
	}
	for _, want := range []string{"box-1, box-2", `<span class="meta">no node yet</span>`} {
		if !slices.Contains(got, want) {
			t.Errorf("pulled-on cells %q lack %q", got, want)
		}
	}
}

// An image that enough jobs of the last week ran in is said to be pulled ahead for it,
// with how many in its title; one marked by an admin keeps its own badge.
func TestImagesPageSaysWhichImagesArePopular(t *testing.T) {
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ada, user := s.member("ada")
	ctx := t.Context()
	busy := &models.Image{Name: "busy", Reference: "reg.example/busy:1", Status: models.ImageCertified}
	quiet := &models.Image{Name: "quiet", Reference: "reg.example/quiet:1", Status: models.ImageCertified}
	for _, img := range []*models.Image{busy, quiet} {
		if err := st.CreateImage(ctx, img); err != nil {
			t.Fatal(err)
		}
	}
	project, err := st.ProjectByName(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	for i, img := range []*models.Image{busy, busy, busy, busy, busy, busy, quiet} {
		j := &models.Job{Name: "run-" + strconv.Itoa(i), ProjectID: project.ID, UserID: user.ID, Command: `["true"]`, PriorityClass: "research", ImageID: &img.ID}
		if err := st.CreateJob(ctx, j, "user:ada"); err != nil {
			t.Fatal(err)
		}
	}
	_, body := s.send(ada, "GET", "/images", "", nil)
	badges := regexp.MustCompile(`<span class="badge" data-testid="popular" title="([^"]*)">pre-pull: popular</span>`).FindAllStringSubmatch(body, -1)
	if len(badges) != 1 || badges[0][1] != "6 jobs ran in it in the last 7 days, so docker and podman nodes pull it before a job needs it" {
		t.Errorf("popular badges %q, want one, for busy's 6 jobs", badges)
	}
}

// The compatibility matrix says in words why an image does not simply run on a node (a
// hover title alone reaches no touch screen and no keyboard), and says nothing more
// where it runs.
func TestImagesMatrixSaysWhy(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, store.Config{DataDir: t.TempDir()})
	s := newSite(t, st, false)
	ctx := t.Context()
	for _, img := range []*models.Image{
		{Name: "old-cuda", Reference: "example.com/old:1", Framework: "pytorch", CUDAVersion: "11.8", Status: models.ImageCertified},
		{Name: "new-cuda", Reference: "example.com/new:1", Framework: "pytorch", CUDAVersion: "12.8", Status: models.ImageCertified},
	} {
		if err := st.CreateImage(ctx, img); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateNode(ctx, &models.Node{Name: "gpu-1", State: models.NodeReady, Runtime: "docker", DriverVersion: "520.61.05"}, nil); err != nil {
		t.Fatal(err)
	}
	body := s.mustGet(s.signIn("admin", s.password), "/images")
	_, matrix, ok := strings.Cut(body, `data-testid="compat"`)
	if !ok {
		t.Fatal("the images page has no compatibility matrix")
	}
	why := regexp.MustCompile(`<div class="meta compat-why">([^<]*)</div>`).FindAllStringSubmatch(matrix, -1)
	var got []string
	for _, m := range why {
		got = append(got, m[1])
	}
	want := []string{
		"driver 520.61.05 &lt; 570.26, the minimum of CUDA 12.8", // new-cuda: too old
		"a docker node runs container images only",               // plain-command
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the matrix explains %q, want %q (old-cuda runs fully: nothing to explain)", got, want)
	}
}
