package models

import "fmt"

// FieldError is bad input in one named field: handlers answer it with 400 (API) or the
// form re-shown (pages), naming Field and saying what is allowed in Message.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// Invalid returns a FieldError for field with a formatted message.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}
