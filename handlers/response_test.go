package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/gantry-gpu/gantry/models"
)

// failed is the one tail of every handler: nothing for no error, bad input to the form
// that shows it again or as the API's 400 naming the field, anything else a 500.
func TestFailedAnswersEachKindOfError(t *testing.T) {
	h := &Handler{log: slog.New(slog.DiscardHandler)}
	answer := func(err error, invalid func(*models.FieldError)) (bool, *httptest.ResponseRecorder) {
		rec := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(rec)
		c.Request = httptest.NewRequest(http.MethodPost, "/api/v1/jobs", nil)
		return h.failed(c, err, invalid), rec
	}
	body := func(rec *httptest.ResponseRecorder) APIError {
		var b struct{ Error APIError }
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		return b.Error
	}

	if failed, rec := answer(nil, nil); failed || rec.Body.Len() != 0 {
		t.Errorf("no error: failed %v, wrote %q", failed, rec.Body)
	}

	bad := fmt.Errorf("submit: %w", models.Invalid("env.A", "must be a string"))
	failed, rec := answer(bad, nil)
	if want := (APIError{Code: "invalid", Message: "must be a string", Field: "env.A"}); !failed || rec.Code != http.StatusBadRequest || body(rec) != want {
		t.Errorf("bad input on the API: failed %v, %d %+v, want 400 %+v", failed, rec.Code, body(rec), want)
	}

	var shown *models.FieldError
	failed, rec = answer(bad, func(fe *models.FieldError) { shown = fe })
	if !failed || shown == nil || shown.Field != "env.A" || rec.Body.Len() != 0 {
		t.Errorf("bad input to a form: failed %v, shown %v, wrote %q", failed, shown, rec.Body)
	}

	failed, rec = answer(errors.New("database gone"), func(*models.FieldError) { t.Error("a server error was shown as bad input") })
	if got := body(rec); !failed || rec.Code != http.StatusInternalServerError || got.Code != "internal" {
		t.Errorf("server error: failed %v, %d %+v, want 500 internal", failed, rec.Code, got)
	}
}
