package templates

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The committed *_templ.go files must be what the pinned generator makes of the *.templ files.
func TestGeneratedFilesAreFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP templ freshness: -short")
	}
	sources, err := filepath.Glob("*.templ")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no templ sources: %v", err)
	}
	// The generator names files relative to the path it walks, so mirror the repo layout.
	root := t.TempDir()
	tmp := filepath.Join(root, "templates")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, src), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "tool", "templ", "generate", "-path", root)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("templ generate: %v\n%s", err, out)
	}
	for _, src := range sources {
		gen := strings.TrimSuffix(src, ".templ") + "_templ.go"
		want, err := os.ReadFile(filepath.Join(tmp, gen))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(gen)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go tool templ generate` and commit the result", gen)
		}
	}
}

func TestLayoutMarksActiveSection(t *testing.T) {
	var buf bytes.Buffer
	p := Page{Title: "Home", Active: "home", Version: "v9.9.9"}
	if err := Home(p, HomeData{QueuedJobs: 3}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{`aria-current="page">Home<`, "Gantry v9.9.9", `data-testid="queued">3<`, "<title>Home · Gantry</title>"} {
		if !strings.Contains(html, want) {
			t.Errorf("home page lacks %q", want)
		}
	}
}

// A conditional ARIA attribute (aria-invalid?={ … }) renders bare, which ARIA reads as
// "false": fields are marked through invalidIf, which writes aria-invalid="true".
func TestNoConditionalARIAAttributes(t *testing.T) {
	sources, err := filepath.Glob("*.templ")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no templ sources: %v", err)
	}
	bare := regexp.MustCompile(`aria-[a-z]+\?=`)
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := bare.FindString(line); m != "" {
				t.Errorf("%s:%d: %s renders a bare attribute; use { invalidIf(…)... }", src, i+1, m)
			}
		}
	}
}

func TestInvalidIfSaysTrue(t *testing.T) {
	var buf bytes.Buffer
	d := TokensData{Field: "name", Error: "Name: is required."}
	if err := Tokens(Page{Title: "Tokens"}, d).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if !regexp.MustCompile(`id="name"[^>]*aria-invalid="true"`).MatchString(html) || strings.Count(html, "aria-invalid") != 1 {
		t.Errorf("the name field alone should say aria-invalid=\"true\":\n%s", html)
	}
}

// The layout tells htmx to swap 400 and 422 answers (forms and filters shown again with
// their error) and no other error, in JSON that htmx can read.
func TestLayoutConfiguresHTMXSwaps(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Home(Page{Title: "Home", Active: "home"}, HomeData{}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<meta name="htmx-config" content='([^']*)'>`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("no htmx-config meta in:\n%s", buf.String())
	}
	var cfg struct {
		ResponseHandling []struct {
			Code        string
			Swap, Error bool
		}
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &cfg); err != nil {
		t.Fatalf("htmx-config %s: %v", m[1], err)
	}
	swaps := map[string]bool{}
	for _, code := range []string{"200", "204", "302", "400", "403", "422", "500"} {
		for _, r := range cfg.ResponseHandling {
			if regexp.MustCompile(r.Code).MatchString(code) {
				swaps[code] = r.Swap && !r.Error
				break
			}
		}
	}
	want := map[string]bool{"200": true, "204": false, "302": true, "400": true, "403": false, "422": true, "500": false}
	if !maps.Equal(swaps, want) {
		t.Errorf("htmx swaps %v, want %v", swaps, want)
	}
}
