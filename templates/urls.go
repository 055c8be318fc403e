package templates

import (
	"encoding/json"
	"net/url"
	"strconv"
)

func queryEscape(s string) string { return url.QueryEscape(s) }

// csrfHeaders is the hx-headers value that makes every htmx request carry the CSRF token.
func csrfHeaders(token string) string {
	b, _ := json.Marshal(token)
	return `{"X-CSRF-Token":` + string(b) + `}`
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

// htmxConfig is the layout's htmx configuration: validation errors (400, 422) are
// swapped in like successes; no other error is.
const htmxConfig = `{"responseHandling": [{"code": "204", "swap": false}, {"code": "[23]..", "swap": true}, {"code": "^(400|422)$", "swap": true, "error": false}, {"code": "...", "swap": false, "error": true}]}`

func pathEscape(s string) string { return url.PathEscape(s) }
