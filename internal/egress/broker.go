package egress

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/egress/relay"
)

// SecretSpec is one [[sandbox.egress.secrets]] entry.
type SecretSpec struct {
	Env   string   // the variable holding the real value, in warden's environment
	Hosts []string // exact host names that receive it
}

// BrokerOptions configure NewBroker.
type BrokerOptions struct {
	// Dir is the workspace's egress state directory (WorkspaceDir): the CA
	// key (0600), its certificate and the placeholder seed live there.
	Dir     string
	Secrets []SecretSpec
	// Getenv reads the real values (nil: os.LookupEnv).
	Getenv func(string) (string, bool)
	// Now is the clock for certificates (nil: time.Now).
	Now func() time.Time
}

// Broker keeps brokered secrets on the host: the jail gets a placeholder
// per secret, and the host swaps the real value in, only in requests to
// the secret's hosts, only inside TLS it terminated with the workspace CA.
type Broker struct {
	secrets []*secret
	byHost  map[string][]*secret
	ca      *authority
}

type secret struct {
	env         string
	hosts       []string
	value       string
	placeholder string
}

// PlaceholderPrefix begins every placeholder, so a person (and the
// detector) can tell one at a glance.
const PlaceholderPrefix = relay.PlaceholderPrefix

// WorkspaceDir is where the egress state of a workspace lives under
// warden's state directory: one directory per workspace path.
func WorkspaceDir(stateDir, workspace string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(workspace)))
	return filepath.Join(stateDir, "egress", hex.EncodeToString(sum[:8]))
}

// NewBroker reads the real values, derives the placeholders and loads (or
// creates, on first use) the workspace CA. A secret whose variable is unset
// or holds what no header may carry is an error naming it.
func NewBroker(o BrokerOptions) (*Broker, error) {
	if o.Dir == "" {
		return nil, errors.New("egress broker: no state directory")
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress broker: create %s: %w", o.Dir, err)
	}
	seed, err := loadSeed(filepath.Join(o.Dir, "placeholder.seed"))
	if err != nil {
		return nil, err
	}
	b := &Broker{byHost: map[string][]*secret{}}
	var hosts []string
	for i, spec := range o.Secrets {
		v, ok := getenv(spec.Env)
		if !ok || v == "" {
			return nil, fmt.Errorf("sandbox.egress.secrets[%d]: %s is not set in warden's environment", i, spec.Env)
		}
		if !httpguts.ValidHeaderFieldValue(v) || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("sandbox.egress.secrets[%d]: the value of %s cannot go in an HTTP header (control bytes)", i, spec.Env)
		}
		if len(spec.Hosts) == 0 {
			return nil, fmt.Errorf("sandbox.egress.secrets[%d]: %s lists no hosts", i, spec.Env)
		}
		mac := hmac.New(sha256.New, seed)
		mac.Write([]byte(spec.Env))
		s := &secret{env: spec.Env, value: v, placeholder: PlaceholderPrefix + hex.EncodeToString(mac.Sum(nil)[:16])}
		for _, h := range spec.Hosts {
			ch, err := policy.ParseHost(h)
			if err != nil || ch.IsIP() {
				return nil, fmt.Errorf("sandbox.egress.secrets[%d].hosts: %q must be a host name", i, h)
			}
			s.hosts = append(s.hosts, ch.Name)
			b.byHost[ch.Name] = append(b.byHost[ch.Name], s)
			if !slices.Contains(hosts, ch.Name) {
				hosts = append(hosts, ch.Name)
			}
		}
		b.secrets = append(b.secrets, s)
	}
	if b.ca, err = loadAuthority(o.Dir, hosts, now); err != nil {
		return nil, err
	}
	return b, nil
}

// loadSeed reads the per-workspace placeholder seed, creating it on first
// use: placeholders stay the same across worker restarts, so a tool that
// saved one in its config keeps working.
func loadSeed(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) == 32 {
		return b, nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("egress broker: read %s: %w", path, err)
	}
	seed := make([]byte, 32)
	rand.Read(seed)
	if err := writeFileAtomic(path, seed, 0o600); err != nil {
		return nil, err
	}
	return seed, nil
}

// Env returns the jail's environment entries: NAME=placeholder.
func (b *Broker) Env() []string {
	out := make([]string, len(b.secrets))
	for i, s := range b.secrets {
		out[i] = s.env + "=" + s.placeholder
	}
	return out
}

// Placeholder returns the placeholder the jail holds for env.
func (b *Broker) Placeholder(env string) (string, bool) {
	for _, s := range b.secrets {
		if s.env == env {
			return s.placeholder, true
		}
	}
	return "", false
}

// CACertPEM is the workspace CA's certificate, for the jail to trust.
func (b *Broker) CACertPEM() []byte { return b.ca.certPEM }

// terminates reports whether TLS to h is terminated (h receives a secret).
func (b *Broker) terminates(h policy.Host) bool { return !h.IsIP() && len(b.byHost[h.Name]) > 0 }

// secretsFor names the secrets h would receive.
func (b *Broker) secretsFor(h policy.Host) []string {
	if h.IsIP() {
		return nil
	}
	var out []string
	for _, s := range b.byHost[h.Name] {
		out = append(out, s.env)
	}
	return out
}

func (s *secret) sendsTo(h policy.Host) bool { return !h.IsIP() && slices.Contains(s.hosts, h.Name) }

// rewrite looks for placeholders in a request's target and headers
// (including inside Basic credentials). Inside TLS warden terminated, a
// placeholder going to one of its secret's hosts is replaced in the
// headers by the real value; anywhere else it refuses the request. It
// returns the secrets sent, or why the request is refused.
func (b *Broker) rewrite(req *http.Request, h policy.Host, terminated bool) (sent []string, why string) {
	refuse := func(s *secret, where string) string {
		if !s.sendsTo(h) {
			return fmt.Sprintf("the placeholder of %s was sent to %s (%s), which is not one of its hosts", s.env, h, where)
		}
		return fmt.Sprintf("the placeholder of %s was sent to %s in clear text (%s); it is only replaced inside https", s.env, h, where)
	}
	for _, s := range b.secrets {
		if strings.Contains(req.URL.String(), s.placeholder) || strings.Contains(req.Host, s.placeholder) {
			if !terminated || !s.sendsTo(h) {
				return nil, refuse(s, "in the URL")
			}
			// To its own host, in the URL, it stays a placeholder:
			// only headers are rewritten.
		}
	}
	for name, values := range req.Header {
		for i, v := range values {
			for _, s := range b.secrets {
				nv, found := replaceIn(v, s.placeholder, s.value)
				if !found {
					continue
				}
				if !terminated || !s.sendsTo(h) {
					return nil, refuse(s, "in the "+name+" header")
				}
				v = nv
				if !slices.Contains(sent, s.env) {
					sent = append(sent, s.env)
				}
			}
			values[i] = v
		}
	}
	return sent, ""
}

// replaceIn replaces ph with real in a header value, also inside a Basic
// credential (base64 of user:password, as git sends a token).
func replaceIn(v, ph, real string) (string, bool) {
	if strings.Contains(v, ph) {
		return strings.ReplaceAll(v, ph, real), true
	}
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return v, false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil || !strings.Contains(string(raw), ph) {
		return v, false
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(raw), ph, real))), true
}

// placeholderError ends a request body in which a placeholder was seen.
type placeholderError struct{ env, host string }

func (e *placeholderError) Error() string {
	return fmt.Sprintf("the placeholder of %s was seen in a request body to %s", e.env, e.host)
}

// scanBody wraps a request body so that a placeholder in it ends the
// request before the placeholder's last byte is sent: the reader holds
// back the bytes that might begin one. Its own hosts may receive a
// placeholder in a body (it is not replaced there) over terminated TLS.
//
// net/http does not wrap a body's read error so that errors.As finds it:
// after a failed write, ask the reader (seen).
func (b *Broker) scanBody(body io.ReadCloser, h policy.Host, terminated bool) io.ReadCloser {
	var pats []*secret
	longest := 0
	for _, s := range b.secrets {
		if terminated && s.sendsTo(h) {
			continue
		}
		pats = append(pats, s)
		longest = max(longest, len(s.placeholder))
	}
	if len(pats) == 0 {
		return body
	}
	return &scanReader{r: body, pats: pats, keep: longest - 1, host: h.String()}
}

type scanReader struct {
	r         io.ReadCloser
	pats      []*secret
	keep      int
	host      string
	held, out []byte
	buf       [32 << 10]byte
	eof       bool
	err       error
}

func (s *scanReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.eof {
			return 0, io.EOF
		}
		n, err := s.r.Read(s.buf[:])
		data := append(s.held, s.buf[:n]...)
		for _, pt := range s.pats {
			if bytes.Contains(data, []byte(pt.placeholder)) {
				s.err = &placeholderError{env: pt.env, host: s.host}
				return 0, s.err
			}
		}
		switch {
		case err == io.EOF:
			s.eof, s.out, s.held = true, data, nil
		case err != nil:
			s.err = err
			s.out, s.held = data[:0], nil
		default:
			cut := max(len(data)-s.keep, 0)
			s.out, s.held = data[:cut:cut], append([]byte(nil), data[cut:]...)
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *scanReader) Close() error { return s.r.Close() }

// seen returns the placeholder error a scanning body ended with, if any.
func seen(body io.Reader) *placeholderError {
	if s, ok := body.(*scanReader); ok {
		if pe, ok := s.err.(*placeholderError); ok {
			return pe
		}
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so a crash never leaves half a key.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
