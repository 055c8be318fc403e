package templates

import (
	"bytes"
	"context"
	"testing"

	"github.com/a-h/templ"
)

// appendEscaped and text escape every byte as templ's { s } does: each byte alone and
// after another, and what the fuzzer finds.
func TestEscapingMatchesTempl(t *testing.T) {
	t.Parallel()
	for i := range 256 {
		for j := range 256 {
			checkEscaping(t, string([]byte{byte(i), 'x', byte(j)}))
		}
	}
	for _, s := range []string{"", "plain", `<script>alert("x")</script>`, "a&b&amp;c", "it's", "é<ü>", "\x00\xff<"} {
		checkEscaping(t, s)
	}
}

func FuzzEscaping(f *testing.F) {
	for _, s := range []string{"", "train-000001", `<b a='1' c="2">&</b>`, "\xc3(\xa0<"} {
		f.Add(s)
	}
	f.Fuzz(checkEscaping)
}

func checkEscaping(t *testing.T, s string) {
	t.Helper()
	want := templ.EscapeString(s)
	if got := string(appendEscaped([]byte("pre"), s)); got != "pre"+want {
		t.Fatalf("appendEscaped(%q) = %q, want %q", s, got, "pre"+want)
	}
	var buf bytes.Buffer
	if err := text(s).Render(context.Background(), &buf); err != nil || buf.String() != want {
		t.Fatalf("text(%q) = %q (%v), want %q", s, buf.String(), err, want)
	}
}
