package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gantry-gpu/gantry/services/agentapi"
)

// Formats of interruption notices: the instance-metadata endpoints of the clouds.
const (
	// NoticeAWS: GET /latest/meta-data/spot/instance-action answers 404 until a spot
	// interruption is scheduled, then {"action": "terminate"|"stop"|"hibernate", "time": RFC 3339}.
	NoticeAWS = "aws"
	// NoticeGCP: GET /computeMetadata/v1/instance/preempted answers FALSE, then TRUE
	// once the VM is preempted (about 30 s before it stops).
	NoticeGCP = "gcp"
	// NoticeAzure: GET /metadata/scheduledevents lists events; a Preempt (spot
	// eviction) or Terminate event says when in NotBefore.
	NoticeAzure = "azure"
)

// NoticeFormats lists the formats in the order messages name them.
var NoticeFormats = []string{NoticeAWS, NoticeGCP, NoticeAzure}

// gcpNoticeWindow is how long GCP leaves a preempted VM, as its documentation says.
const gcpNoticeWindow = 30 * time.Second

// NoticeFormatOf guesses a notice format from the endpoint's path.
func NoticeFormatOf(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", endpoint)
	}
	switch p := strings.ToLower(u.Path); {
	case strings.HasSuffix(p, "/spot/instance-action"):
		return NoticeAWS, nil
	case strings.HasSuffix(p, "/instance/preempted"):
		return NoticeGCP, nil
	case strings.Contains(p, "scheduledevents"):
		return NoticeAzure, nil
	}
	return "", fmt.Errorf("cannot tell the cloud from %q: give --interruption-format (%s)", endpoint, strings.Join(NoticeFormats, ", "))
}

// noticeWatcher polls the metadata endpoint for an interruption notice.
type noticeWatcher struct {
	endpoint string
	format   string
	every    time.Duration
	http     *http.Client
	log      *slog.Logger
	now      func() time.Time

	mu     sync.Mutex
	notice *agentapi.Interruption
}

// parseNotice reads one answer of the endpoint; nil means no interruption is scheduled.
func parseNotice(format string, status int, body []byte, now time.Time) (*agentapi.Interruption, error) {
	switch format {
	case NoticeAWS:
		if status == http.StatusNotFound {
			return nil, nil
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("instance-action answered %d", status)
		}
		var v struct {
			Action string    `json:"action"`
			Time   time.Time `json:"time"`
		}
		if err := json.Unmarshal(body, &v); err != nil || v.Action == "" {
			return nil, fmt.Errorf("instance-action answered %q, not {\"action\", \"time\"}", clipBody(body))
		}
		return &agentapi.Interruption{Deadline: v.Time.UTC(), Reason: "AWS spot instance-action: " + v.Action}, nil
	case NoticeGCP:
		if status != http.StatusOK {
			return nil, fmt.Errorf("instance/preempted answered %d", status)
		}
		switch strings.TrimSpace(string(body)) {
		case "FALSE":
			return nil, nil
		case "TRUE":
			return &agentapi.Interruption{Deadline: now.Add(gcpNoticeWindow).UTC(), Reason: "GCP instance preempted"}, nil
		}
		return nil, fmt.Errorf("instance/preempted answered %q, not TRUE or FALSE", clipBody(body))
	case NoticeAzure:
		if status != http.StatusOK {
			return nil, fmt.Errorf("scheduledevents answered %d", status)
		}
		var v struct {
			Events []struct {
				EventID     string `json:"EventId"`
				EventType   string `json:"EventType"`
				EventStatus string `json:"EventStatus"`
				NotBefore   string `json:"NotBefore"`
			} `json:"Events"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return nil, fmt.Errorf("scheduledevents answered %q, not {\"Events\": […]}", clipBody(body))
		}
		for _, e := range v.Events {
			if (e.EventType != "Preempt" && e.EventType != "Terminate") || e.EventStatus != "Scheduled" {
				continue
			}
			deadline := now.Add(gcpNoticeWindow)
			if e.NotBefore != "" {
				t, err := time.Parse(time.RFC1123, e.NotBefore)
				if err != nil {
					return nil, fmt.Errorf("scheduled event %s: NotBefore %q is not an RFC 1123 time", e.EventID, e.NotBefore)
				}
				deadline = t
			}
			return &agentapi.Interruption{Deadline: deadline.UTC(), Reason: "Azure scheduled event " + e.EventType + " " + e.EventID}, nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("unknown notice format %q", format)
}

func clipBody(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// run polls until ctx ends; on a notice it keeps it (the heartbeat carries it) and
// calls found once. A failing endpoint is retried with doubling waits and logged
// once until it answers again.
func (w *noticeWatcher) run(ctx context.Context, found func()) {
	failing := false
	wait := w.every
	for {
		n, err := w.poll(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !failing {
				w.log.Warn("cannot read the interruption notice endpoint; retrying with back-off", "url", w.endpoint, "err", err)
			}
			failing = true
			wait = min(2*wait, 5*time.Minute)
		default:
			if failing {
				w.log.Info("the interruption notice endpoint answers again", "url", w.endpoint)
			}
			failing, wait = false, w.every
			if n != nil && w.keep(n) {
				w.log.Warn("interruption notice: jobs checkpoint and move to other nodes", "deadline", n.Deadline, "reason", n.Reason)
				found()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// keep records the first notice; it reports whether this one is new.
func (w *noticeWatcher) keep(n *agentapi.Interruption) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.notice != nil {
		return false
	}
	w.notice = n
	return true
}

// current is the notice seen, or nil.
func (w *noticeWatcher) current() *agentapi.Interruption {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.notice
}

// poll asks the endpoint once, with the headers its cloud wants.
func (w *noticeWatcher) poll(ctx context.Context) (*agentapi.Interruption, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.endpoint, nil)
	if err != nil {
		return nil, err
	}
	switch w.format {
	case NoticeGCP:
		req.Header.Set("Metadata-Flavor", "Google")
	case NoticeAzure:
		req.Header.Set("Metadata", "true")
	case NoticeAWS:
		if token := w.awsToken(ctx); token != "" {
			req.Header.Set("X-aws-ec2-metadata-token", token)
		}
	}
	res, err := w.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	return parseNotice(w.format, res.StatusCode, body, w.now())
}

// awsToken asks IMDSv2 for a session token; "" falls back to IMDSv1.
func (w *noticeWatcher) awsToken(ctx context.Context) string {
	u, err := url.Parse(w.endpoint)
	if err != nil {
		return ""
	}
	u.Path, u.RawQuery = "/latest/api/token", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), nil)
	if err != nil {
		return ""
	}
	req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "300")
	res, err := w.http.Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if err != nil || res.StatusCode != http.StatusOK {
		return ""
	}
	return strings.TrimSpace(string(b))
}
