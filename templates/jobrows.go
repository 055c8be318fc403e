package templates

import (
	"context"
	"io"
	"strconv"
	"time"
)

// jobRows are the rows of the jobs list, written in Go rather than templ: templ boxes,
// resolves and escapes every attribute value and writes each piece through its buffer,
// which for 25 rows of eight cells was most of what drawing the page cost. The rows are
// appended into one lent buffer (scratch) and written at once. A row is
//
//	<tr data-job="ID"><td><a href="/jobs/ID">name</a> <span class="meta">#ID</span></td>
//	<td>stateBadge, then <div class="meta">reason</div> when the reason says more</td>
//	<td>project</td><td>user</td><td class="mono">image</td><td>GPUs</td>
//	<td><time>2006-01-02 15:04</time></td></tr>
//
// without the line breaks. Every string of the job is HTML-escaped as { s } would; the
// id is digits and the time a fixed layout, so they are written as they are.
type jobRows []JobRow

func (rows jobRows) Render(_ context.Context, w io.Writer) error {
	return writeAppended(w, func(b []byte) []byte {
		for i := range rows {
			b = rows[i].appendHTML(b)
		}
		return b
	})
}

func (j *JobRow) appendHTML(b []byte) []byte {
	var digits [20]byte
	id := strconv.AppendInt(digits[:0], j.ID, 10)
	b = append(b, `<tr data-job="`...)
	b = append(b, id...)
	b = append(b, `"><td><a href="/jobs/`...)
	b = append(b, id...)
	b = append(b, `">`...)
	b = appendEscaped(b, j.Name)
	b = append(b, `</a> <span class="meta">#`...)
	b = append(b, id...)
	b = append(b, `</span></td><td>`...)
	b = appendStateBadge(b, j.State)
	if j.StateReason != "" && j.StateReason != j.State {
		b = append(b, `<div class="meta">`...)
		b = appendEscaped(b, j.StateReason)
		b = append(b, `</div>`...)
	}
	b = append(b, `</td><td>`...)
	b = appendEscaped(b, j.Project)
	b = append(b, `</td><td>`...)
	b = appendEscaped(b, j.User)
	b = append(b, `</td><td class="mono">`...)
	b = appendEscaped(b, j.Image)
	b = append(b, `</td><td>`...)
	b = appendEscaped(b, j.GPUs)
	b = append(b, `</td><td><time>`...)
	b = appendMinuteUTC(b, j.Submitted)
	return append(b, `</time></td></tr>`...)
}

// appendMinuteUTC appends t in UTC as "2006-01-02 15:04", as t.UTC().Format would,
// digit by digit: Format parses its layout on every call, which per row of a list
// costs more than the rest of the cell.
func appendMinuteUTC(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, "2006-01-02 15:04")
	}
	hour, minute, _ := t.Clock()
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-')
	b = appendTwoDigits(b, int(month))
	b = append(b, '-')
	b = appendTwoDigits(b, day)
	b = append(b, ' ')
	b = appendTwoDigits(b, hour)
	b = append(b, ':')
	return appendTwoDigits(b, minute)
}

func appendTwoDigits(b []byte, n int) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
}
