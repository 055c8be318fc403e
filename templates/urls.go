package templates

import (
	"encoding/json"
	"net/url"
	"strconv"
)

func queryEscape(s string) string { return url.QueryEscape(s) }

// csrfHeaders is the hx-headers value that makes every htmx request carry the CSRF token.
func csrfHeaders(token string) string {
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": token})
	return string(b)
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }
