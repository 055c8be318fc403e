package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	if r := badParams(c.Request.PostForm, "form"); r != nil {
		return r
	}
	return jsonFault(c)
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

// jsonFault refuses a JSON body any of whose strings, keys or values, is not text as
// plainText means it (a \u0000 escape is a NUL byte), or holds an escaped UTF-16
// surrogate without its pair, which encoding/json would quietly store as U+FFFD, or
// that gives a key twice in one object. The
// body is put back for the handler; one that is not JSON is left to the handler to
// refuse in its own words.
func jsonFault(c *gin.Context) *refusal {
	if !isAPIPath(c) || safeMethod(c.Request.Method) || c.Request.Body == nil {
		return nil
	}
	body, err := io.ReadAll(c.Request.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &refusal{status: http.StatusBadRequest, code: "too_large", message: fmt.Sprintf("the body is larger than %d KiB", maxBody>>10), field: "body"}
	}
	if err != nil {
		return &refusal{status: http.StatusBadRequest, code: "malformed", message: "the body could not be read: " + err.Error(), field: "body"}
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	if field, message := jsonTextFault(body); field != "" {
		return badText(field, message)
	}
	return nil
}

// jsonFrame is an object or array being walked, and where in it the walk is.
type jsonFrame struct {
	object   bool
	key      string // the object's current key
	wantsKey bool   // the object's next string is a key
	index    int    // the array's current element
	keys     map[string]bool
}

// jsonTextFault walks body and returns the first string that fails, or the first key
// given twice in its object, as the path of
// its field ("resources.gpu_model", "command[2]", "env.HOME"; a bad key is blamed on
// its object) and what is wrong; "" when all hold or the body is not JSON.
func jsonTextFault(body []byte) (field, message string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []jsonFrame
	path := func(key bool) string {
		var b strings.Builder
		for i, f := range stack {
			switch {
			case !f.object:
				fmt.Fprintf(&b, "[%d]", f.index)
			case key && i == len(stack)-1:
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		if b.Len() == 0 {
			return "body"
		}
		return b.String()
	}
	// next moves the innermost frame past the value just read.
	next := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].object {
				stack[n-1].wantsKey = true
			} else {
				stack[n-1].index++
			}
		}
	}
	var from int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "" // the end, or not JSON: the handler says so
		}
		raw := body[from:dec.InputOffset()]
		from = dec.InputOffset()
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, jsonFrame{object: true, wantsKey: true})
			case '[':
				stack = append(stack, jsonFrame{})
			default:
				stack = stack[:len(stack)-1]
				next()
			}
		case string:
			key := len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantsKey
			if problem := stringFault(raw); problem != "" {
				if key {
					return path(true), "has a key that " + problem
				}
				return path(false), problem
			}
			if key {
				f := &stack[len(stack)-1]
				f.key, f.wantsKey = t, false
				// encoding/json would keep the last and drop the others unsaid.
				if f.keys[t] {
					return path(false), "is given twice: give it once"
				}
				if f.keys == nil {
					f.keys = map[string]bool{}
				}
				f.keys[t] = true
				continue
			}
			next()
		default:
			next()
		}
	}
}

// stringFault judges the raw text of one JSON string token (with what precedes it in
// the body since the last token: a comma, a colon, spaces).
func stringFault(raw []byte) string {
	lit := raw[bytes.IndexByte(raw, '"')+1 : len(raw)-1]
	if !utf8.Valid(lit) {
		return "is not valid UTF-8 text"
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		i++
		if lit[i] != 'u' {
			continue
		}
		r, _ := strconv.ParseUint(string(lit[i+1:i+5]), 16, 32)
		i += 4
		switch {
		case r == 0:
			return "holds a NUL character (\\u0000): " + notText
		case r >= 0xD800 && r < 0xDC00:
			// A high surrogate counts only with a low one right after it.
			if i+6 < len(lit) && lit[i+1] == '\\' && lit[i+2] == 'u' {
				if lo, err := strconv.ParseUint(string(lit[i+3:i+7]), 16, 32); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					i += 6
					continue
				}
			}
			return fmt.Sprintf("holds \\u%04x, half of a UTF-16 surrogate pair without the other half: not a character", r)
		case r >= 0xDC00 && r < 0xE000:
			return fmt.Sprintf("holds \\u%04x, half of a UTF-16 surrogate pair without the other half: not a character", r)
		}
	}
	return ""
}
