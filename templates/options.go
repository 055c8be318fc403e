package templates

import (
	"context"
	"io"

	"github.com/a-h/templ"
)

// options are the <option>s of a select, one per value, said as label(value) (the value
// itself when label is nil), the one equal to selected marked selected:
//
//	<option value="v" selected>label</option>
//
// Written in Go rather than as a templ loop, which boxes, resolves and escapes every
// value attribute: an admin's project filter lists every project.
type options struct {
	values   []string
	selected string
	label    func(string) string
}

func selectOptions(values []string, selected string, label func(string) string) templ.Component {
	return options{values: values, selected: selected, label: label}
}

func (o options) Render(_ context.Context, w io.Writer) error {
	return writeAppended(w, o.appendHTML)
}

func (o options) appendHTML(b []byte) []byte {
	for _, v := range o.values {
		b = append(b, `<option value="`...)
		b = appendEscaped(b, v)
		b = append(b, '"')
		if v == o.selected {
			b = append(b, ` selected`...)
		}
		b = append(b, '>')
		label := v
		if o.label != nil {
			label = o.label(v)
		}
		b = appendEscaped(b, label)
		b = append(b, `</option>`...)
	}
	return b
}
