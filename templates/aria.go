package templates

import "github.com/a-h/templ"

// invalidIf marks a field that failed validation as aria-invalid="true", which screen
// readers announce and the stylesheet outlines. templ's aria-invalid?= would write a
// bare attribute, which ARIA reads as "false".
func invalidIf(bad bool) templ.Attributes {
	if bad {
		return templ.Attributes{"aria-invalid": "true"}
	}
	return nil
}

// invalid marks the input of field when the form's error is about it.
func invalid(errField, field string) templ.Attributes {
	return invalidIf(errField == field)
}

// describedBy ties a field to its hint (fieldHint's id), so a screen reader reads the
// hint with the field; a field without a hint gets nothing.
func describedBy(name, hint string) templ.Attributes {
	if hint == "" {
		return nil
	}
	return templ.Attributes{"aria-describedby": name + "-hint"}
}
