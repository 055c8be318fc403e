package templates

import (
	"encoding/json"
	"net/url"
	"strconv"
)

func queryEscape(s string) string { return url.QueryEscape(s) }

// csrfHeaders is the hx-headers value that makes every htmx request carry the CSRF token.
func csrfHeaders(token string) string {
	for i := 0; i < len(token); i++ {
		if c := token[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			b, _ := json.Marshal(token)
			return `{"X-CSRF-Token":` + string(b) + `}`
		}
	}
	// A token of letters, digits, - and _ (all that sessions make) is its own JSON string.
	return `{"X-CSRF-Token":"` + token + `"}`
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

func pathEscape(s string) string { return url.PathEscape(s) }
