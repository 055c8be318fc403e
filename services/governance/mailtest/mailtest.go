// Package mailtest gives tests a real SMTP server on loopback that keeps what it is
// sent, for the e-mail that governance sends (alerts, and the e-mails other services
// queue with it).
package mailtest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	smtpd "github.com/emersion/go-smtp"
)

// Server is a real SMTP server on loopback. It refuses recipients at refuse.example, as
// a mail server refuses an unknown domain.
type Server struct {
	// Addr is its host:port on 127.0.0.1.
	Addr string
	mu   sync.Mutex
	msgs []Message
}

// Message is one e-mail the server accepted: the envelope and the data as sent.
type Message struct {
	From string
	To   []string
	Data string
}

// New starts a server that stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	m := &Server{}
	srv := smtpd.NewServer(m)
	srv.Domain = "localhost"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.Addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return m
}

// NewSession implements smtpd.Backend.
func (m *Server) NewSession(*smtpd.Conn) (smtpd.Session, error) { return &session{m: m}, nil }

// Received returns the e-mails accepted so far, in order.
func (m *Server) Received() []Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Message(nil), m.msgs...)
}

type session struct {
	m   *Server
	cur Message
}

func (s *session) Reset()        { s.cur = Message{} }
func (s *session) Logout() error { return nil }
func (s *session) Mail(from string, _ *smtpd.MailOptions) error {
	s.cur.From = from
	return nil
}
func (s *session) Rcpt(to string, _ *smtpd.RcptOptions) error {
	if strings.HasSuffix(to, "@refuse.example") {
		return &smtpd.SMTPError{Code: 550, EnhancedCode: smtpd.EnhancedCode{5, 1, 1}, Message: "no such mailbox"}
	}
	s.cur.To = append(s.cur.To, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = string(b)
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.msgs = append(s.m.msgs, s.cur)
	return nil
}
