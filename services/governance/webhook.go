package governance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/gantry-gpu/gantry/models"
)

// WebhookSender posts alerts as JSON that Slack's incoming webhooks (and Mattermost's,
// and most chat tools') accept: "text" is what they show; "alert" is the same alert
// structured, for receivers that automate on it.
type WebhookSender struct {
	Client *http.Client
}

// webhookBody is what a webhook receives.
type webhookBody struct {
	Text  string       `json:"text"`
	Alert AlertPayload `json:"alert"`
}

// Send posts m to the channel's URL; anything but a 2xx answer is an error.
func (w WebhookSender) Send(ctx context.Context, ch models.NotificationChannel, m Message) error {
	text := m.Subject
	if m.Alert.URL != "" {
		text += "\n" + m.Alert.URL
	}
	body, err := json.Marshal(webhookBody{Text: text, Alert: m.Alert})
	if err != nil {
		return fmt.Errorf("encode webhook body: %w", err)
	}
	// A webhook's URL is its secret (Slack's carries it in the path): errors, which end
	// up in the log and on the alert's page, name its scheme and host only.
	where := webhookHost(ch.Target)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.Target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s (%s): the URL is not valid", ch.Name, where)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gantry-alerts")
	client := w.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // without the URL it wraps
	}
	if err != nil {
		return fmt.Errorf("webhook %s (%s): %w", ch.Name, where, err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook %s (%s) answered %s: %s", ch.Name, where, resp.Status, bytes.TrimSpace(snippet))
	}
	return nil
}

// webhookHost is what of a webhook's URL may be shown: its scheme and host.
func webhookHost(target string) string {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return "an invalid URL"
	}
	return u.Scheme + "://" + u.Host
}
