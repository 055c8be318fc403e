package dispatch

import (
	"context"
	"strconv"
	"strings"

	"github.com/gantry-gpu/gantry/models"
	"github.com/gantry-gpu/gantry/services/store"
)

// clipped ends a text cut short, by Gantry's agent (clip) and Slurm backend (shorten).
const clipped = "…"

// maskedText is text that came from outside Gantry about a job (a node agent's words on
// how it ended, Slurm's refusal of its batch script), with the values of the job's
// secret variables masked, before it is stored in events, reasons and audit details.
// It reads the secrets only when there is text.
func maskedText(ctx context.Context, st *store.Store, jobID int64, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	secrets, err := st.JobSecretEnv(ctx, jobID)
	if err != nil {
		return "", err
	}
	return maskText(text, secrets), nil
}

// maskText replaces every value of secrets that text holds with models.MaskedSecret,
// which hides its length too: as written, and as Go quotes it (%q, which Gantry's own
// errors use for text they cannot read). A text cut short (ending in "…") that ends
// in the beginning of a value has that beginning masked. Values that overlap are
// masked as one.
func maskText(text string, secrets map[string]string) string {
	var forms []string
	for _, v := range secrets {
		if v == "" {
			continue
		}
		forms = append(forms, v)
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			forms = append(forms, q[1:len(q)-1])
		}
	}
	if len(forms) == 0 {
		return text
	}
	hidden := make([]bool, len(text))
	found := false
	hide := func(from, to int) {
		for i := from; i < to; i++ {
			hidden[i] = true
		}
		found = true
	}
	body := strings.TrimSuffix(text, clipped)
	for _, f := range forms {
		for at := 0; ; {
			i := strings.Index(text[at:], f)
			if i < 0 {
				break
			}
			hide(at+i, at+i+len(f))
			at += i + 1
		}
		if len(body) < len(text) {
			for n := len(f) - 1; n > 0; n-- {
				if strings.HasSuffix(body, f[:n]) {
					hide(len(body)-n, len(body))
					break
				}
			}
		}
	}
	if !found {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if !hidden[i] {
			b.WriteByte(text[i])
			i++
			continue
		}
		b.WriteString(models.MaskedSecret)
		for i < len(text) && hidden[i] {
			i++
		}
	}
	return b.String()
}
