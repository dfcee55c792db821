package store

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseLocator: whatever is typed after --db, a locator never carries
// a password, and an error never repeats one.
func FuzzParseLocator(f *testing.F) {
	for _, s := range []string{
		"/var/lib/warden.db", "sqlite:/x.db", "postgres", "postgres:TEAM_DB", "postgresql:X",
		"postgres://u@h/d", "postgres://u:pw@h/d", "postgres://h/d?password=pw", "postgres://u:pw@[::1/d",
		"host=h password=pw", "postgres://u%3Apw@h/d", "postgres://:pw@h", "POSTGRES://u:pw@h/d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocator(s, "")
		if err != nil {
			return
		}
		if l.URL == "" {
			return
		}
		u, perr := url.Parse(l.URL)
		if perr != nil {
			t.Fatalf("accepted an unparsable URL %q", l.URL)
		}
		if _, set := u.User.Password(); set {
			t.Fatalf("accepted a URL with a password: %q", s)
		}
		for k, vs := range u.Query() {
			switch strings.ToLower(k) {
			case "password", "sslpassword":
				if strings.Join(vs, "") != "" {
					t.Fatalf("accepted a URL with a %s parameter: %q", k, s)
				}
			}
		}
	})
}
