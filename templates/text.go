package templates

import (
	"context"
	"io"

	"github.com/a-h/templ"
)

// text writes a string HTML-escaped, as { s } does, but without the copy and the boxing
// that templ makes of every { … } expression (two allocations each): lists that draw many
// rows, such as the jobs list, write their cells with @text(s).
type text string

func (t text) Render(_ context.Context, w io.Writer) error {
	_, err := io.WriteString(w, templ.EscapeString(string(t)))
	return err
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
	b = append(b, templ.EscapeString(state)...)
	b = append(b, `">`...)
	b = append(b, templ.EscapeString(stateLabel(state))...)
	return append(b, `</span>`...)
}
