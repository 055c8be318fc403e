package handlers

import "testing"

func TestJobOfPage(t *testing.T) {
	for page, want := range map[string]int64{
		"/jobs/12":                   12,
		"/jobs/12/telemetry":         12,
		"/jobs/12?attempt=2":         12,
		"/jobs/999999999999999999":   999999999999999999,
		"/jobs/1234567890123456789":  0, // 19 digits: not a job id
		"/jobs/":                     0,
		"/jobs/new":                  0,
		"/jobs/12x":                  0,
		"/jobs":                      0,
		"/jobs?state=failed":         0,
		"/admin/jobs/12":             0,
		"/jobs/-3":                   0,
		"":                           0,
		"/jobs/007":                  7,
		"/jobs/12/logs/download?x=1": 12,
	} {
		if got := jobOfPage(page); got != want {
			t.Errorf("jobOfPage(%q) = %d, want %d", page, got, want)
		}
	}
}
