package governance

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"strings"
	"time"

	"github.com/gantry-gpu/gantry/models"
)

// SMTPSender e-mails alerts through a mail server.
type SMTPSender struct {
	Addr string // host:port of the server
	From string // the sender address
	// Username and Password, when set, authenticate with PLAIN, which Go sends only
	// over TLS (or to localhost).
	Username, Password string
	// RequireTLS refuses a server that does not offer STARTTLS; otherwise STARTTLS is
	// used whenever offered.
	RequireTLS bool
	// TLSConfig verifies the server; nil verifies against the system roots.
	TLSConfig *tls.Config
}

// Send e-mails m to the channel's address; the context's deadline bounds the whole exchange.
func (m SMTPSender) Send(ctx context.Context, ch models.NotificationChannel, msg Message) error {
	to, err := mail.ParseAddress(ch.Target)
	if err != nil {
		return fmt.Errorf("e-mail channel %s: address %q: %w", ch.Name, ch.Target, err)
	}
	return m.send(ctx, to, msg)
}

// SendTo e-mails msg to one address, as Send does to a channel's.
func (m SMTPSender) SendTo(ctx context.Context, address string, msg Message) error {
	to, err := mail.ParseAddress(address)
	if err != nil {
		return fmt.Errorf("e-mail address: %w", err)
	}
	return m.send(ctx, to, msg)
}

func (m SMTPSender) send(ctx context.Context, to *mail.Address, msg Message) error {
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return fmt.Errorf("e-mail sender %q: %w", m.From, err)
	}
	host, _, err := net.SplitHostPort(m.Addr)
	if err != nil {
		return fmt.Errorf("SMTP server %q: want host:port: %w", m.Addr, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("SMTP server %s: %w", m.Addr, err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		cfg := m.TLSConfig
		if cfg == nil {
			cfg = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
		}
		if err := c.StartTLS(cfg); err != nil {
			return fmt.Errorf("SMTP server %s: STARTTLS: %w", m.Addr, err)
		}
	} else if m.RequireTLS {
		return fmt.Errorf("SMTP server %s does not offer STARTTLS, which is required", m.Addr)
	}
	if m.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, host)); err != nil {
			return fmt.Errorf("SMTP server %s: authenticate as %s: %w", m.Addr, m.Username, err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return fmt.Errorf("SMTP server %s: MAIL FROM %s: %w", m.Addr, from.Address, err)
	}
	if err := c.Rcpt(to.Address); err != nil {
		return fmt.Errorf("SMTP server %s: RCPT TO %s: %w", m.Addr, to.Address, err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("SMTP server %s: DATA: %w", m.Addr, err)
	}
	if _, err := w.Write(compose(from, to, msg, time.Now())); err != nil {
		return fmt.Errorf("SMTP server %s: write message: %w", m.Addr, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("SMTP server %s: end message: %w", m.Addr, err)
	}
	if err := c.Quit(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("SMTP server %s: QUIT: %w", m.Addr, err)
	}
	return nil
}

// compose writes a plain-text e-mail with CRLF line ends, the subject encoded when it
// is not ASCII.
func compose(from, to *mail.Address, msg Message, date time.Time) []byte {
	var b strings.Builder
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", from.String())
	header("To", to.String())
	header("Subject", mimeWord(msg.Subject))
	header("Date", date.UTC().Format(time.RFC1123Z))
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "8bit")
	if msg.Alert.ID != 0 {
		header("X-Gantry-Alert", fmt.Sprint(msg.Alert.ID))
	}
	b.WriteString("\r\n")
	for _, line := range strings.Split(strings.TrimRight(msg.Text, "\n"), "\n") {
		b.WriteString(strings.TrimRight(line, "\r") + "\r\n")
	}
	return []byte(b.String())
}

// mimeWord encodes a header value that is not plain ASCII (RFC 2047) and keeps a
// newline from breaking out of the header.
func mimeWord(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for _, r := range s {
		if r > 126 {
			return mime.QEncoding.Encode("utf-8", s)
		}
	}
	return s
}
