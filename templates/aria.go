package templates

import (
	"strings"

	"github.com/a-h/templ"
)

// invalidIf marks a field that failed validation as aria-invalid="true", which screen
// readers announce and the stylesheet outlines. templ's aria-invalid?= would write a
// bare attribute, which ARIA reads as "false".
func invalidIf(bad bool) templ.Attributes {
	if bad {
		return templ.Attributes{"aria-invalid": "true"}
	}
	return nil
}

// fieldARIA gives an input of the submit form its ARIA: hint is the id of the text that
// describes it ("" for none). When the form was shown again for an error about this
// field (errField), the field is marked invalid, has focus as the page opens, and is
// described by the error first (#form-error), so a screen reader reads what is wrong
// where the user lands.
func fieldARIA(errField, name, hint string) templ.Attributes {
	a := templ.Attributes{}
	if hint != "" {
		a["aria-describedby"] = hint
	}
	if errField == name {
		a["aria-invalid"], a["autofocus"] = "true", true
		a["aria-describedby"] = strings.TrimSpace("form-error " + hint)
	}
	return a
}

// hintOf is the id of the hint fieldHint draws for name, or "" when there is none.
func hintOf(name, hint string) string {
	if hint == "" {
		return ""
	}
	return name + "-hint"
}
