package templates

import (
	"io"
	"sync"
)

// scratch lends the Go-written parts of pages (jobRows, options, stateBadge) a buffer
// to append their markup into before they write it at once, so that drawing a page
// allocates none per row.
var scratch = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

// writeAppended writes what appendHTML appends to a lent buffer.
func writeAppended(w io.Writer, appendHTML func([]byte) []byte) error {
	bp := scratch.Get().(*[]byte)
	b := appendHTML((*bp)[:0])
	_, err := w.Write(b)
	*bp = b[:0]
	scratch.Put(bp)
	return err
}
