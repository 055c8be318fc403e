package templates

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var formTag = regexp.MustCompile(`(?s)<form\b[^>]*>`)

// Every form that posts carries the CSRF token (the gate refuses one without it, so a
// form that forgot it would only ever answer 403), and none posts to another site.
func TestEveryPostingFormCarriesTheCSRFToken(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	forms := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, loc := range formTag.FindAllStringIndex(src, -1) {
			tag := src[loc[0]:loc[1]]
			if !strings.Contains(strings.ToLower(tag), `method="post"`) {
				continue
			}
			forms++
			line := strings.Count(src[:loc[0]], "\n") + 1
			end := strings.Index(src[loc[1]:], "</form>")
			if end < 0 {
				t.Errorf("%s:%d: a form without </form>", f, line)
				continue
			}
			if body := src[loc[1] : loc[1]+end]; !strings.Contains(body, `name="csrf_token"`) {
				t.Errorf("%s:%d: a posting form without the csrf_token field", f, line)
			}
			if strings.Contains(tag, `action="http`) || strings.Contains(tag, `action="//`) {
				t.Errorf("%s:%d: a form posts to another site: %s", f, line, tag)
			}
		}
	}
	if forms < 40 {
		t.Fatalf("found %d posting forms; the pattern no longer finds them", forms)
	}
}
