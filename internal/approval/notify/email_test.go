package notify

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCert is a self-signed certificate for 127.0.0.1, made on the fly.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// smtpd is a tiny SMTP server (RFC 5321 with STARTTLS, RFC 3207, and AUTH
// PLAIN, RFC 4616): enough to see what warden sends, and whether in clear.
type smtpd struct {
	ln       net.Listener
	tls      *tls.Config
	starttls bool
	wg       sync.WaitGroup

	mu    sync.Mutex
	cmds  []string // each command, prefixed "clear " or "tls "
	auth  []string // decoded AUTH PLAIN responses
	msgs  [][]byte
	conns int
	got   chan struct{}
}

func newSMTPD(t *testing.T, starttls bool) (*smtpd, *x509.CertPool) {
	t.Helper()
	cert, pool := testCert(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &smtpd{ln: ln, tls: &tls.Config{Certificates: []tls.Certificate{cert}}, starttls: starttls, got: make(chan struct{}, 8)}
	d.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			d.conns++
			d.mu.Unlock()
			d.wg.Go(func() { d.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); d.wg.Wait() })
	return d, pool
}

func (d *smtpd) serve(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	tp := textproto.NewConn(conn)
	secure := false
	tp.PrintfLine("220 smtp.test ESMTP")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		mode := "clear "
		if secure {
			mode = "tls "
		}
		d.mu.Lock()
		d.cmds = append(d.cmds, mode+line)
		d.mu.Unlock()
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			switch {
			case secure:
				tp.PrintfLine("250-smtp.test\r\n250-AUTH PLAIN\r\n250 8BITMIME")
			case d.starttls:
				tp.PrintfLine("250-smtp.test\r\n250-STARTTLS\r\n250 8BITMIME")
			default:
				tp.PrintfLine("250-smtp.test\r\n250-AUTH PLAIN\r\n250 8BITMIME")
			}
		case "STARTTLS":
			if !d.starttls || secure {
				tp.PrintfLine("502 no")
				continue
			}
			tp.PrintfLine("220 go ahead")
			tc := tls.Server(conn, d.tls)
			if err := tc.Handshake(); err != nil {
				return
			}
			conn, tp, secure = tc, textproto.NewConn(tc), true
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			b, err := base64.StdEncoding.DecodeString(resp)
			if strings.ToUpper(mech) != "PLAIN" || err != nil {
				tp.PrintfLine("504 unsupported")
				continue
			}
			d.mu.Lock()
			d.auth = append(d.auth, string(b))
			d.mu.Unlock()
			tp.PrintfLine("235 ok")
		case "MAIL", "RCPT", "RSET", "NOOP":
			tp.PrintfLine("250 ok")
		case "DATA":
			tp.PrintfLine("354 go")
			b, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			d.mu.Lock()
			d.msgs = append(d.msgs, b)
			d.mu.Unlock()
			tp.PrintfLine("250 queued")
			d.got <- struct{}{}
		case "QUIT":
			tp.PrintfLine("221 bye")
			return
		default:
			tp.PrintfLine("500 what")
		}
	}
}

func (d *smtpd) snapshot() (cmds, auth []string, msgs [][]byte, conns int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.cmds...), append([]string(nil), d.auth...), append([][]byte(nil), d.msgs...), d.conns
}

func TestEmailSend(t *testing.T) {
	t.Parallel()
	d, pool := newSMTPD(t, true)
	e, err := NewEmail(EmailOptions{Addr: d.ln.Addr().String(), From: "warden@example.com", To: []string{"ops@example.com", "sec@example.com"},
		Username: "warden", Password: "hunter2-smtp", RootCAs: pool, PageURL: "https://warden.example"})
	if err != nil {
		t.Fatal(err)
	}
	p := *hostileReq
	p.Tool = "run_command\r\nBcc: evil@attacker.example"
	p.Args = json.RawMessage(`{"command":"x\r\nBcc: evil@attacker.example\r\n\r\nfake body","api_key":"sk-abcdefghijklmnopqrstuvwx1234"}`)
	if err := e.Notify(t.Context(), &p); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no mail")
	}
	e.Close()
	cmds, auth, msgs, _ := d.snapshot()
	for _, c := range cmds {
		if strings.HasPrefix(c, "clear ") && !strings.HasPrefix(c, "clear EHLO") && c != "clear STARTTLS" {
			t.Errorf("sent in the clear: %q", c)
		}
	}
	if len(auth) != 1 || auth[0] != "\x00warden\x00hunter2-smtp" {
		t.Errorf("AUTH PLAIN %q", auth)
	}
	var rcpts []string
	for _, c := range cmds {
		if strings.HasPrefix(c, "tls RCPT TO:") {
			rcpts = append(rcpts, c)
		}
	}
	if strings.Join(rcpts, "|") != "tls RCPT TO:<ops@example.com>|tls RCPT TO:<sec@example.com>" {
		t.Errorf("recipients %q", rcpts)
	}
	m, err := mail.ReadMessage(bytes.NewReader(msgs[0]))
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if subj != "warden: approval needed for run_commandBccevilattacker.example" {
		t.Errorf("subject %q", subj)
	}
	for k := range m.Header {
		if !map[string]bool{"From": true, "To": true, "Subject": true, "Date": true, "Message-Id": true, "Mime-Version": true,
			"Content-Type": true, "Content-Transfer-Encoding": true, "Auto-Submitted": true}[k] {
			t.Errorf("unexpected header %s: %q", k, m.Header[k])
		}
	}
	if m.Header.Get("To") != "ops@example.com, sec@example.com" {
		t.Errorf("To %q", m.Header.Get("To"))
	}
	body, _ := io.ReadAll(quotedprintable.NewReader(m.Body))
	text := string(body)
	for _, want := range []string{"Open: https://warden.example/requests/" + p.ID, "[REDACTED]", "warden approvals approve " + p.ID, `x\r\nBcc: evil`} {
		if !strings.Contains(text, want) {
			t.Errorf("body lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "sk-abcdefghijkl") || strings.Contains(text, "hunter2") {
		t.Errorf("secret in the body:\n%s", text)
	}
	// The body's lines are the message's: none came from the arguments.
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Bcc:") || sc.Text() == "fake body" {
			t.Errorf("the arguments made a line of their own: %q", sc.Text())
		}
	}
}

// A server without STARTTLS gets nothing: no AUTH, no MAIL, no message,
// and no retry.
func TestEmailRefusesWithoutStartTLS(t *testing.T) {
	t.Parallel()
	d, pool := newSMTPD(t, false)
	e, err := NewEmail(EmailOptions{Addr: d.ln.Addr().String(), From: "warden@example.com", To: []string{"ops@example.com"},
		Username: "warden", Password: "hunter2-smtp", RootCAs: pool, Notify: &Options{Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	err = e.send(t.Context(), []byte("Subject: x\r\n\r\nbody\r\n"))
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("send: %v", err)
	}
	e.Notify(t.Context(), hostileReq)
	e.Close()
	cmds, auth, msgs, conns := d.snapshot()
	for _, c := range cmds {
		if !strings.HasPrefix(c, "clear EHLO") {
			t.Errorf("sent without TLS: %q", c)
		}
	}
	if len(auth)+len(msgs) != 0 || conns != 2 {
		t.Errorf("auth %q, %d messages, %d connections (want 2: the refusal is not retried)", auth, len(msgs), conns)
	}
}

// A certificate that does not verify stops the exchange after STARTTLS.
func TestEmailUntrustedCertificate(t *testing.T) {
	t.Parallel()
	d, _ := newSMTPD(t, true)
	e, err := NewEmail(EmailOptions{Addr: d.ln.Addr().String(), From: "warden@example.com", To: []string{"ops@example.com"},
		Username: "warden", Password: "hunter2-smtp"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.send(t.Context(), []byte("Subject: x\r\n\r\nbody\r\n")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("send: %v", err)
	}
	cmds, auth, msgs, _ := d.snapshot()
	if len(auth)+len(msgs) != 0 || len(cmds) != 2 {
		t.Errorf("after a bad certificate: %q %q %d", cmds, auth, len(msgs))
	}
}

func TestEmailAddressesChecked(t *testing.T) {
	t.Parallel()
	for _, bad := range []EmailOptions{
		{Addr: "127.0.0.1:25", From: "a@example.com\r\nBcc: x@evil.example", To: []string{"b@example.com"}},
		{Addr: "127.0.0.1:25", From: "a@example.com", To: []string{"b@example.com>\r\nRCPT TO:<x@evil.example"}},
		{Addr: "127.0.0.1:25", From: "Eve <a@example.com>", To: []string{"b@example.com"}},
		{Addr: "127.0.0.1:25", From: "a@example.com", To: []string{"b@example.com, x@evil.example"}},
		{Addr: "127.0.0.1:25", From: "a@example.com"},
		{Addr: "nohostport", From: "a@example.com", To: []string{"b@example.com"}},
		{Addr: "127.0.0.1:25", From: "a@example.com", To: []string{"b@example.com"}, Username: "u"},
	} {
		if e, err := NewEmail(bad); err == nil {
			e.Close()
			t.Errorf("accepted %+v", bad)
		}
	}
}

func TestHeaderSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"run_command":            "run_command",
		"mcp.server-x__tool":     "mcp.server-x__tool",
		"a\r\nBcc: x@y":          "aBccxy",
		"=?utf-8?q?evil?=":       "utf-8qevil",
		"":                       "a tool",
		"\r\n":                   "a tool",
		strings.Repeat("x", 100): strings.Repeat("x", 64),
		"ünïcode\u202e":          "ncode",
	} {
		if got := headerSafe(in, 64); got != want {
			t.Errorf("headerSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
