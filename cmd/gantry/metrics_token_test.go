package main

import (
	"net/http"
	"strings"
	"testing"
)

// GANTRY_METRICS_TOKEN closes /metrics to scrapes without it; serve's log, at debug,
// never holds the token.
func TestServeMetricsToken(t *testing.T) {
	const token = "9b1f0c3e7d2a4b6c8e0f1a3c5e7b9d1f"
	url, stop := serve(t, []string{"GANTRY_DATA_DIR=" + t.TempDir(), "GANTRY_METRICS_TOKEN=" + token},
		"--no-local-agent", "--log-level", "debug")
	scrape := func(auth string) int {
		req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := scrape(""); got != http.StatusUnauthorized {
		t.Errorf("a scrape without the token = %d, want 401", got)
	}
	if got := scrape("Bearer " + token); got != http.StatusOK {
		t.Errorf("a scrape with the token = %d, want 200", got)
	}
	code, logs := stop()
	if code != 0 {
		t.Fatalf("serve exit %d; log: %s", code, logs)
	}
	if strings.Contains(logs, token) {
		t.Errorf("serve's log holds the metrics token: %s", logs)
	}
	if !strings.Contains(logs, `path=/metrics`) {
		t.Errorf("the scrapes are not in the access log: %s", logs)
	}
}
