package egress

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/egress/policy"
)

// checkCanonicalTarget holds for every target the proxy acts on: it reads
// back as itself and holds no byte any parser might take differently.
func checkCanonicalTarget(t *testing.T, s string) {
	t.Helper()
	tg, err := policy.ParseTarget(s)
	if err != nil || tg.String() != s {
		t.Fatalf("target %q is not canonical: %v %v", s, tg, err)
	}
	if strings.ContainsAny(s, "\x00%@ \t\r\n/\\_") {
		t.Fatalf("target %q holds a refused byte", s)
	}
}

func TestPeekHead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, head, err string }{
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nbody", "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", ""},
		{"GET http://a/ HTTP/1.1\nHost: a\n\n", "", "bare LF"},
		{"GET http://a/ HTTP/1.1\rHost: a\r\n\r\n", "", "bare CR"},
		{"GET http://a/ HTTP/1.1\r\nX: " + strings.Repeat("a", maxHead) + "\r\n\r\n", "", "larger than"},
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\n", "", "EOF"},
	} {
		br := bufio.NewReaderSize(strings.NewReader(c.in), maxHead)
		head, err := peekHead(br)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("peekHead(%.40q) = %q, %v; want error %q", c.in, head, err, c.err)
			}
			continue
		}
		if err != nil || string(head) != c.head || br.Buffered() != len(c.in) {
			t.Errorf("peekHead(%.40q) = %q, %v (consumed %d)", c.in, head, err, len(c.in)-br.Buffered())
		}
	}
}

func FuzzRequestHead(f *testing.F) {
	for _, s := range []string{
		"GET http://allowed.test/x?y HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"GET http://allowed.test:8080/ HTTP/1.1\r\nHost: allowed.test:8080\r\nUser-Agent: x\r\n\r\n",
		"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc",
		"GET http://a.test\x00.b/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://a.test@b.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
		"GET HTTP://A.TEST/ HTTP/1.0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(in), maxHead)
		head, err := peekHead(br)
		if err != nil {
			return
		}
		rq, err := parseHead(head)
		if err != nil {
			return
		}
		switch rq.form {
		case formConnect, formAbsolute:
			checkCanonicalTarget(t, rq.target.String())
			if rq.hasHost {
				if err := checkHost(rq.hostRaw, rq.target); err != nil {
					t.Fatalf("accepted a Host %q that differs from %s", rq.hostRaw, rq.target)
				}
			}
		case formOrigin:
		default:
			t.Fatalf("no form: %+v", rq)
		}
		// The differential oracle: when net/http reads the same bytes, it
		// must read the same request.
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if err := rq.crossCheck(req); err != nil {
			t.Fatalf("net/http reads %q as %s %s (host %q), warden as %s %s", head, req.Method, req.URL, req.Host, rq.method, rq.authority)
		}
	})
}
