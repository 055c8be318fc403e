package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gantry-gpu/gantry/services/accounting"
	"github.com/gantry-gpu/gantry/services/audit"
	"github.com/gantry-gpu/gantry/services/governance"
	"github.com/gantry-gpu/gantry/services/store"
	"github.com/gantry-gpu/gantry/services/telemetry"
)

// smtpPasswordEnv holds the SMTP password: an environment variable only, never a
// flag or a config-file key, so that it shows in no process list and no file.
const smtpPasswordEnv = "GANTRY_SMTP_PASSWORD"

// costOpts are serve's metering, rules and notification flags.
type costOpts struct {
	meterEvery time.Duration
	rulesEvery time.Duration
	smtpHost   string
	smtpPort   int
	smtpFrom   string
	smtpUser   string
}

func (o *costOpts) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.meterEvery, "meter-every", time.Minute, "how often running allocations are metered into the cost ledger (ended ones are metered at once)")
	f.DurationVar(&o.rulesEvery, "rules-every", time.Minute, "how often anomaly rules are evaluated and due notifications sent")
	f.StringVar(&o.smtpHost, "smtp-host", "", "mail server that e-mail alert channels and the e-mails to feedback authors go through; empty: no e-mail is sent")
	f.IntVar(&o.smtpPort, "smtp-port", 587, "port of --smtp-host (STARTTLS is used whenever the server offers it)")
	f.StringVar(&o.smtpFrom, "smtp-from", "", "sender address of Gantry's e-mails, e.g. Gantry <gantry@example.com>")
	f.StringVar(&o.smtpUser, "smtp-user", "", "user to authenticate as at --smtp-host; its password comes from "+smtpPasswordEnv+" only")
}

// check refuses flags that cannot work, before serve opens anything.
func (o *costOpts) check() error {
	switch {
	case o.meterEvery <= 0 || o.meterEvery > time.Hour:
		return usageError{fmt.Errorf("--meter-every %s: want more than 0 and at most 1h", o.meterEvery)}
	case o.rulesEvery <= 0 || o.rulesEvery > 24*time.Hour:
		return usageError{fmt.Errorf("--rules-every %s: want more than 0 and at most 24h", o.rulesEvery)}
	}
	_, err := o.mailer()
	return err
}

// services builds accounting and governance for the leader's loops. Governance stops
// jobs through stopper and links its notifications to publicURL.
func (o *costOpts) services(st *store.Store, tel *telemetry.Service, stopper governance.Stopper, log *slog.Logger, publicURL string) (*accounting.Accounting, *governance.Service, error) {
	senders := map[string]governance.Sender{governance.ChannelWebhook: governance.WebhookSender{Client: &http.Client{}}}
	mailer, err := o.mailer()
	if err != nil {
		return nil, nil, err
	}
	al := audit.New(st, time.Now)
	deps := governance.Deps{Store: st, Audit: al, Log: log.With("component", "governance"), Idle: tel, Stopper: stopper, Senders: senders}
	if mailer != nil {
		senders[governance.ChannelEmail] = *mailer
		deps.Mailer = *mailer
	}
	acc, err := accounting.New(st, al, accounting.Config{})
	if err != nil {
		return nil, nil, err
	}
	deps.Accounting = acc
	gov, err := governance.New(deps, governance.Config{PortalURL: publicURL})
	if err != nil {
		return nil, nil, err
	}
	return acc, gov, nil
}

// mailer is the SMTP sender of the flags, or nil when no mail server is set.
func (o *costOpts) mailer() (*governance.SMTPSender, error) {
	password := os.Getenv(smtpPasswordEnv)
	if o.smtpHost == "" {
		if o.smtpFrom != "" || o.smtpUser != "" || password != "" {
			return nil, usageError{fmt.Errorf("--smtp-from, --smtp-user and %s need --smtp-host", smtpPasswordEnv)}
		}
		return nil, nil
	}
	if o.smtpPort < 1 || o.smtpPort > 65535 {
		return nil, usageError{fmt.Errorf("--smtp-port %d: want 1 to 65535", o.smtpPort)}
	}
	if _, err := mail.ParseAddress(o.smtpFrom); err != nil {
		return nil, usageError{fmt.Errorf("--smtp-from %q: want an e-mail address, e.g. Gantry <gantry@example.com>", o.smtpFrom)}
	}
	if (o.smtpUser == "") != (password == "") {
		return nil, usageError{fmt.Errorf("--smtp-user and %s go together: give both or neither", smtpPasswordEnv)}
	}
	return &governance.SMTPSender{Addr: net.JoinHostPort(o.smtpHost, strconv.Itoa(o.smtpPort)), From: o.smtpFrom,
		Username: o.smtpUser, Password: password}, nil
}
