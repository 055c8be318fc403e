package templates

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// benchJobsData is a first page of the jobs list as an admin sees it: 25 jobs, 20
// projects in the filter, more pages after it.
func benchJobsData() (Page, JobsData) {
	p := Page{
		Title: "Jobs", Active: "jobs", Version: "bench", User: "admin", CSRF: "csrf-token-0123456789abcdef",
		Auditor: true, Admin: true,
		Feedback: FeedbackContext{Page: "/jobs?state=failed", Categories: []string{"bug", "idea", "question", "capacity", "image-request"}},
	}
	d := JobsData{
		Filter: JobsFilter{State: "failed", Sort: "-submitted_at"},
		States: []string{"queued", "held", "scheduled", "running", "preempting", "succeeded", "failed", "cancelled"},
		Sorts:  []string{"-submitted_at", "submitted_at", "name", "-name", "-gpus", "gpus"},
		Me:     "admin", Next: "eyJzIjoiMjAyNi0xMS0zMFQxMDowMDowMFoiLCJpIjo5OTk3NX0",
	}
	for i := range 20 {
		d.Projects = append(d.Projects, fmt.Sprintf("project-%02d", i))
	}
	for i := range 25 {
		d.Jobs = append(d.Jobs, models.JobBrief{
			ID: int64(99_999 - i), Name: fmt.Sprintf("train-%06d", 99_999-i), ProjectName: "project-07", Username: "user-042",
			State: "failed", StateReason: "exit code 1", ImageRef: "nvcr.io/nvidia/pytorch:24.07-py3", GPUs: 4, GPUModel: "A100",
			SubmittedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		})
	}
	return p, d
}

// BenchmarkJobsPage draws the jobs page (layout, filters, 25 rows), what GET /jobs
// spends on HTML; BenchmarkJobsList in web/ measures the whole request.
func BenchmarkJobsPage(b *testing.B) {
	p, d := benchJobsData()
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Jobs(p, d).Render(context.Background(), &buf); err != nil {
			b.Fatal(err)
		}
	}
}

// What a job's name, reason, image and the rest hold is escaped in the list, and its
// state is a badge that says the state in words, not colour alone.
func TestJobRowsEscapeWhatTheyShow(t *testing.T) {
	t.Parallel()
	_, d := benchJobsData()
	d.Jobs = []models.JobBrief{{ID: 7, Name: `<script>x</script>`, ProjectName: `a&b`, Username: `"u"`, State: `failed`,
		StateReason: `<b>oom</b>`, ImageRef: `img'1`, GPUs: 1, GPUModel: `<i>`, SubmittedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}}
	var buf bytes.Buffer
	if err := JobResults(d).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{`<tr data-job="7">`, `<a href="/jobs/7">&lt;script&gt;x&lt;/script&gt;</a>`, `<span class="meta">#7</span>`,
		`<span class="badge state-failed">✗ failed</span>`, `<div class="meta">&lt;b&gt;oom&lt;/b&gt;</div>`,
		`<td>a&amp;b</td>`, `<td>&#34;u&#34;</td>`, `<td class="mono">img&#39;1</td>`, `<td>1 × &lt;i&gt;</td>`, `<time>2026-11-30 10:00</time>`} {
		if !strings.Contains(html, want) {
			t.Errorf("the row lacks %s:\n%s", want, html)
		}
	}
	if strings.Contains(html, "<script>") || strings.Contains(html, "<b>") || strings.Contains(html, "<i>") {
		t.Errorf("the row writes markup from its data:\n%s", html)
	}
}

// A reason that only repeats the state ("failed" of a failed job) is not written under
// its badge again; one that says more is.
func TestJobRowsShowOnlyReasonsThatSayMore(t *testing.T) {
	t.Parallel()
	_, d := benchJobsData()
	d.Jobs = []models.JobBrief{{ID: 1, State: "failed", StateReason: "failed"}, {ID: 2, State: "failed", StateReason: "oom_killed"}}
	var buf bytes.Buffer
	if err := JobResults(d).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if strings.Contains(html, `<div class="meta">failed</div>`) || !strings.Contains(html, `<div class="meta">oom_killed</div>`) {
		t.Errorf("the rows' reasons:\n%s", html)
	}
}

// A job's image cell names its reference, or its project's default, or nothing; its
// GPU cell what it asks of GPUs: a MIG slice, a share of one, a count of a model, none.
func TestJobRowsWordImagesAndGPUs(t *testing.T) {
	t.Parallel()
	image := int64(3)
	for _, c := range []struct {
		job         models.JobBrief
		image, gpus string
	}{
		{models.JobBrief{ImageRef: "nvcr.io/x:1", GPUs: 8, GPUModel: "H100"}, "nvcr.io/x:1", "8 × H100"},
		{models.JobBrief{ImageID: &image, GPUs: 2}, "project default", "2"},
		{models.JobBrief{GPUs: 1, GPUMilli: 250}, "–", "0.25 of 1"},
		{models.JobBrief{GPUs: 1, MIGProfile: "1g.10gb", GPUMilli: 500}, "–", "MIG 1g.10gb"},
		{models.JobBrief{ImageRef: "busybox"}, "busybox", "none"},
	} {
		_, d := benchJobsData()
		d.Jobs = []models.JobBrief{c.job}
		var buf bytes.Buffer
		if err := JobResults(d).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if want := `<td class="mono">` + c.image + `</td><td>` + c.gpus + `</td>`; !strings.Contains(buf.String(), want) {
			t.Errorf("%+v: the row lacks %s:\n%s", c.job, want, buf.String())
		}
	}
}

// The list's links carry the filter as url.Values.Encode would write it.
func TestJobsFilterLinks(t *testing.T) {
	t.Parallel()
	f := JobsFilter{State: "failed", Project: "a&b c", User: "ü", Image: "x/y:z", From: "2026-01-01", To: "2026-02-01", Sort: "name"}
	want := url.Values{"state": {"failed"}, "project": {"a&b c"}, "user": {"ü"}, "image": {"x/y:z"}, "from": {"2026-01-01"}, "to": {"2026-02-01"}, "sort": {"-gpus"}}
	for _, c := range []struct {
		f            JobsFilter
		sort, cursor string
		want         string
	}{
		{f, "-gpus", "", "/jobs?" + want.Encode()},
		{f, "", "c/1=", "/jobs?" + strings.Replace(want.Encode(), "sort=-gpus", "sort=name", 1) + "&cursor=c%2F1%3D"},
		{JobsFilter{}, "", "", "/jobs?"},
		{JobsFilter{Sort: "-submitted_at"}, "name", "", "/jobs?sort=name"},
	} {
		if got := string(c.f.link(c.sort, c.cursor)); got != c.want {
			t.Errorf("%+v.link(%q, %q) = %s, want %s", c.f, c.sort, c.cursor, got, c.want)
		}
	}
}

// A row's submission time reads as time.Format writes it in UTC, from any zone and year.
func TestAppendMinuteUTC(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("east", 5*3600+30*60)
	for _, at := range []time.Time{
		time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 3, 7, 59, 999, east),
		time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC), time.Date(26, 3, 5, 4, 9, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), {},
	} {
		if got, want := string(appendMinuteUTC([]byte("x"), at)), "x"+at.UTC().Format("2006-01-02 15:04"); got != want {
			t.Errorf("appendMinuteUTC(%v) = %q, want %q", at, got, want)
		}
	}
}
