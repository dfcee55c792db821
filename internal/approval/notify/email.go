package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/approval"
)

// EmailOptions configure an Email channel.
type EmailOptions struct {
	Addr     string // SMTP server host:port
	From     string
	To       []string
	Username string // AUTH PLAIN when set (after STARTTLS only)
	Password string
	// RootCAs verify the server's certificate; nil for the system roots.
	RootCAs *x509.CertPool
	PageURL string
	// Timeout bounds one whole SMTP exchange; default 30 s.
	Timeout time.Duration
	Notify  *Options
}

// Email is a Channel that mails each new request, as plain text with the
// link to the request on the page, over SMTP with STARTTLS required: a
// server that does not offer STARTTLS, or whose certificate does not
// verify for the host of Addr, gets nothing — not the request, not the
// credentials. It never decides.
//
// Headers carry no agent-controlled text but the tool name, reduced to
// letters, digits and "_.-", so no CR/LF can add a header or a recipient;
// addresses come from the configuration and are checked.
type Email struct {
	o    EmailOptions
	host string
	no   Options
	box  *Outbox
}

// NewEmail starts an email channel; Close stops it.
func NewEmail(o EmailOptions) (*Email, error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("email smtp_addr %q: want host:port", o.Addr)
	}
	if len(o.To) == 0 {
		return nil, errors.New("email needs at least one recipient (to)")
	}
	for _, a := range append([]string{o.From}, o.To...) {
		if err := checkAddress(a); err != nil {
			return nil, err
		}
	}
	if (o.Username == "") != (o.Password == "") {
		return nil, errors.New("email: username and password go together")
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	e := &Email{o: o, host: host, no: o.Notify.WithDefaults()}
	e.box = NewOutbox("email", e.no)
	return e, nil
}

// checkAddress accepts a bare address: no display name, no CR/LF, nothing
// SMTP's MAIL/RCPT or a header could be split on.
func checkAddress(a string) error {
	p, err := mail.ParseAddress(a)
	if err != nil || p.Address != a || p.Name != "" || strings.ContainsAny(a, "\r\n<>, \t\"") {
		return fmt.Errorf("email address %q: want a bare address like ops@example.com", a)
	}
	return nil
}

// headerSafe keeps letters, digits and "_.-" of s, at most max bytes: the
// only agent-controlled text a header gets.
func headerSafe(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			break
		}
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "a tool"
	}
	return b.String()
}

// message builds the RFC 5322 message for p.
func (e *Email) message(p *approval.Pending, now time.Time) []byte {
	s := Summarize(p, e.o.PageURL, now)
	decide := "Decide on the page (link above), or with\n  warden approvals approve " + s.ID + "\n  warden approvals deny " + s.ID + " --reason \"…\""
	body := s.PlainText(decide)
	var msgID [12]byte
	rand.Read(msgID[:])
	var b bytes.Buffer
	h := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	h("From", e.o.From)
	h("To", strings.Join(e.o.To, ", "))
	h("Subject", mime.QEncoding.Encode("utf-8", "warden: approval needed for "+headerSafe(p.Tool, 64)))
	h("Date", now.Format(time.RFC1123Z))
	h("Message-ID", "<"+hex.EncodeToString(msgID[:])+"@warden>")
	h("MIME-Version", "1.0")
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "quoted-printable")
	h("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(body, "\n", "\r\n")))
	qp.Close()
	return b.Bytes()
}

// Notify implements approval.Channel: it queues the mail and returns at once.
func (e *Email) Notify(_ context.Context, p *approval.Pending) error {
	msg := e.message(p, time.Now())
	return e.box.Enqueue(Delivery{What: "mail for request " + p.ID, Send: func(ctx context.Context) error {
		return e.send(ctx, msg)
	}})
}

// Close delivers what is queued (up to CloseTimeout) and stops.
func (e *Email) Close() error { e.box.Close(); return nil }

// ErrNoStartTLS means the SMTP server does not offer STARTTLS: warden
// sends nothing in the clear.
var ErrNoStartTLS = errors.New("the SMTP server does not offer STARTTLS; refusing to send in the clear")

func (e *Email) send(ctx context.Context, msg []byte) (err error) {
	ctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.o.Addr)
	if err != nil {
		return fmt.Errorf("failed to reach the SMTP server %s: %w", e.o.Addr, err)
	}
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	c, err := smtp.NewClient(conn, e.host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("SMTP server %s: %w", e.o.Addr, err)
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return fmt.Errorf("SMTP EHLO: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return Permanent(fmt.Errorf("SMTP server %s: %w", e.o.Addr, ErrNoStartTLS))
	}
	if err := c.StartTLS(&tls.Config{ServerName: e.host, RootCAs: e.o.RootCAs, MinVersion: tls.VersionTLS12}); err != nil {
		return fmt.Errorf("SMTP STARTTLS with %s: %w", e.o.Addr, err)
	}
	if e.o.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", e.o.Username, e.o.Password, e.host)); err != nil {
			return Permanent(fmt.Errorf("SMTP AUTH PLAIN as %s: %w", e.o.Username, err))
		}
	}
	if err := c.Mail(e.o.From); err != nil {
		return smtpErr("MAIL FROM", err)
	}
	for _, to := range e.o.To {
		if err := c.Rcpt(to); err != nil {
			return smtpErr("RCPT TO "+to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return smtpErr("DATA", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("SMTP DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return smtpErr("DATA", err)
	}
	return c.Quit()
}

// smtpErr wraps a failed SMTP step; a 5xx answer is permanent.
func smtpErr(step string, err error) error {
	err = fmt.Errorf("SMTP %s: %w", step, err)
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return Permanent(err)
	}
	return err
}

// ChannelName implements approval.NamedChannel.
func (*Email) ChannelName() string { return "email" }
