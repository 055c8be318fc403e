package templates

import (
	"context"
	"io"
)

// text writes a string HTML-escaped, as { s } does, but without the copy and the boxing
// that templ makes of every { … } expression (two allocations each): lists that draw many
// rows, such as the jobs list, write their cells with @text(s).
type text string

func (t text) Render(_ context.Context, w io.Writer) error {
	s := string(t)
	for i := 0; i < len(s); i++ {
		if escapes[s[i]] != "" {
			return writeAppended(w, func(b []byte) []byte { return appendEscaped(b, s) })
		}
	}
	_, err := io.WriteString(w, s)
	return err
}

// escapes are what html.EscapeString, and so templ's { s }, writes for the five bytes
// it escapes; every other byte is written as it is.
var escapes = [256]string{'&': "&amp;", '\'': "&#39;", '<': "&lt;", '>': "&gt;", '"': "&#34;"}

// appendEscaped appends s HTML-escaped byte for byte as templ.EscapeString does, without
// its strings.Replacer and the string it makes of an escaped value: the Go-written parts
// of pages escape each cell and menu entry with it.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if esc := escapes[s[i]]; esc != "" {
			b = append(b, s[start:i]...)
			b = append(b, esc...)
			start = i + 1
		}
	}
	return append(b, s[start:]...)
}

// stateBadge is a job state as a badge: its symbol and name (stateLabel), and the class
// that colours it. Written here rather than as class={ "badge", "state-" + s }, which
// costs templ a CSS pass and a buffer per row.
type stateBadge string

func (s stateBadge) Render(_ context.Context, w io.Writer) error {
	return writeAppended(w, func(b []byte) []byte { return appendStateBadge(b, string(s)) })
}

func appendStateBadge(b []byte, state string) []byte {
	b = append(b, `<span class="badge state-`...)
	b = appendEscaped(b, state)
	b = append(b, `">`...)
	b = appendEscaped(b, stateLabel(state))
	return append(b, `</span>`...)
}
