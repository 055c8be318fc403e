// Package static embeds the portal's stylesheets and vendored scripts (htmx 2.0.11).
package static

import "embed"

// FS holds css/ and js/, served under /static/.
//
//go:embed css js
var FS embed.FS
