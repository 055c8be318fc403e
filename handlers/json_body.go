package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/strictjson"
)

// readJSON decodes the request's JSON body into v strictly, as jobs.Parse does a job
// spec: an unknown field, a key in other letter case than its field's, a wrong type or
// a second value is refused with a *models.FieldError that names the field and says what
// it must be in JSON's words.
// example is a body that would do, said when the body is not JSON at all.
func readJSON(c *gin.Context, v any, example string) error {
	body, err := io.ReadAll(c.Request.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return models.Invalid("body", "is larger than %d KiB", tooBig.Limit>>10)
	case err != nil:
		return models.Invalid("body", "could not be read: %v", err)
	case len(bytes.TrimSpace(body)) == 0:
		return models.Invalid("body", "is empty: send %s", example)
	}
	if err := strictjson.Check(body, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err = dec.Decode(v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var fe *models.FieldError
	switch {
	case err == nil && dec.More():
		return models.Invalid("body", "holds more than one JSON value: send %s", example)
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &te) && te.Field != "":
		return models.Invalid(te.Field, "must be %s, not %s", strictjson.Kind(te.Type), te.Value)
	case errors.As(err, &te):
		return models.Invalid("body", "must be a JSON object, not %s: send %s", te.Value, example)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return models.Invalid("body", "is not valid JSON (%v): send %s", err, example)
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return models.Invalid(strings.Trim(f, `"`), "is not a field of this request: send %s", example)
	}
	return models.Invalid("body", "is not what this request takes (%v): send %s", err, example)
}
