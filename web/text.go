package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

// notText is what a field that fails plainText is told.
const notText = "must be UTF-8 text without NUL bytes"

// textFault finds the first path parameter, query parameter or form field whose name
// or value is not UTF-8 text without NUL bytes, and refuses the request naming it.
// No such text has any use in Gantry, and PostgreSQL cannot hold it: a lookup by such a
// name would fail there with a server error (SQLite would quietly find nothing), and one
// stored would not read back as it was sent.
func textFault(c *gin.Context) *refusal {
	// A form is read here whatever the credential: the CSRF check reads it only for a session.
	if r := parseForm(c); r != nil {
		return r
	}
	for _, p := range c.Params {
		if !plainText(p.Value) {
			return badText(p.Key, notText)
		}
	}
	if r := badParams(c.Request.URL.Query(), "query"); r != nil {
		return r
	}
	return badParams(c.Request.PostForm, "form")
}

// badParams checks the names and values of a query or form; a bad name is blamed on
// the query or form as a whole, since it names no field of ours.
func badParams(values url.Values, whole string) *refusal {
	for k, vs := range values {
		if !plainText(k) {
			return badText(whole, "has a parameter name that is not UTF-8 text without NUL bytes")
		}
		for _, v := range vs {
			if !plainText(v) {
				return badText(k, notText)
			}
		}
	}
	return nil
}

// badText refuses field with a 400. It denies no access and changes nothing, so, as a
// handler's own validation, it is not audited.
func badText(field, message string) *refusal {
	return &refusal{status: http.StatusBadRequest, code: "invalid", message: message, field: field, unaudited: true,
		page: "The value of " + strconv.Quote(field) + " " + message + ". Correct it and try again."}
}

func plainText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}
