package templates

import (
	"context"
	"io"
	"strconv"
	"time"

	"github.com/gantry-gpu/gantry/models"
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
// id is digits and the time a fixed layout, so they are written as they are. The
// image and GPU cells are worded while they are written (appendImage, appendGPUs):
// no label is made a string first.
type jobRows []models.JobBrief

func (rows jobRows) Render(_ context.Context, w io.Writer) error {
	return writeAppended(w, func(b []byte) []byte {
		for i := range rows {
			b = appendJobRow(b, &rows[i])
		}
		return b
	})
}

func appendJobRow(b []byte, j *models.JobBrief) []byte {
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
	b = appendEscaped(b, j.ProjectName)
	b = append(b, `</td><td>`...)
	b = appendEscaped(b, j.Username)
	b = append(b, `</td><td class="mono">`...)
	b = appendImage(b, j)
	b = append(b, `</td><td>`...)
	b = appendGPUs(b, j)
	b = append(b, `</td><td><time>`...)
	b = appendMinuteUTC(b, j.SubmittedAt)
	return append(b, `</time></td></tr>`...)
}

// appendImage appends the job's image reference; a job on its project's default has none.
func appendImage(b []byte, j *models.JobBrief) []byte {
	switch {
	case j.ImageRef != "":
		return appendEscaped(b, j.ImageRef)
	case j.ImageID != nil:
		return append(b, "project default"...)
	}
	return append(b, "–"...)
}

// appendGPUs appends what the job asks of GPUs: a count (of a model), a share of one,
// or a MIG slice.
func appendGPUs(b []byte, j *models.JobBrief) []byte {
	switch {
	case j.MIGProfile != "":
		return appendEscaped(append(b, "MIG "...), j.MIGProfile)
	case j.GPUMilli > 0:
		return append(strconv.AppendFloat(b, float64(j.GPUMilli)/1000, 'f', -1, 64), " of 1"...)
	case j.GPUs == 0:
		return append(b, "none"...)
	}
	b = strconv.AppendInt(b, int64(j.GPUs), 10)
	if j.GPUModel != "" {
		b = appendEscaped(append(b, " × "...), j.GPUModel)
	}
	return b
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
