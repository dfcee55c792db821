package store

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/store/pgtest"
)

func TestParseLocator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Locator
		wantErr error // nil: no error; errAny: some error
	}{
		{"/var/lib/warden.db", Locator{Backend: BackendSQLite, Path: "/var/lib/warden.db"}, nil},
		{"sqlite:/x.db", Locator{Backend: BackendSQLite, Path: "/x.db"}, nil},
		{"sqlite:", Locator{}, errAny},
		{"postgres", Locator{Backend: BackendPostgres, URLEnv: "TEAM_DB"}, nil},
		{"postgresql", Locator{Backend: BackendPostgres, URLEnv: "TEAM_DB"}, nil},
		{"postgres:OTHER_URL", Locator{Backend: BackendPostgres, URLEnv: "OTHER_URL"}, nil},
		{"postgres:1BAD", Locator{}, errAny},
		{"postgres:A-B", Locator{}, errAny},
		{"postgres://warden@db.internal:5432/warden?sslmode=verify-full", Locator{Backend: BackendPostgres, URL: "postgres://warden@db.internal:5432/warden?sslmode=verify-full"}, nil},
		// Every way to put a password on the command line is refused.
		{"postgres://warden:s3cret@db/warden", Locator{}, ErrPasswordInArgs},
		{"postgresql://warden:s3cret@db/warden", Locator{}, ErrPasswordInArgs},
		{"postgres://warden:@db/warden", Locator{}, ErrPasswordInArgs},
		{"postgres://db/warden?password=s3cret", Locator{}, ErrPasswordInArgs},
		{"postgres://db/warden?PASSWORD=s3cret", Locator{}, ErrPasswordInArgs},
		{"postgres://warden:s3cret@[bad/warden", Locator{}, ErrPasswordInArgs},
		{"host=db user=warden password=s3cret", Locator{}, ErrPasswordInArgs},
		{"host=db user=warden", Locator{}, errAny},
	}
	for _, tt := range tests {
		got, err := ParseLocator(tt.in, "TEAM_DB")
		switch {
		case tt.wantErr == nil && err != nil:
			t.Errorf("ParseLocator(%q): %v", tt.in, err)
		case tt.wantErr != nil && err == nil:
			t.Errorf("ParseLocator(%q) = %+v, want an error", tt.in, got)
		case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
			t.Errorf("ParseLocator(%q): %v, want %v", tt.in, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("ParseLocator(%q): the error repeats the password: %v", tt.in, err)
		case err == nil:
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParseLocator(%q) (-want +got):\n%s", tt.in, d)
			}
		}
	}
}

var errAny = errors.New("any error")

func TestResolve(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	check := func(flag, urlEnv string, want Locator) {
		t.Helper()
		got, err := Resolve(flag, urlEnv, getenv)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Resolve(%q, %q) (-want +got):\n%s", flag, urlEnv, d)
		}
	}
	t.Setenv("WARDEN_DB", "")
	check("", "", Locator{Backend: BackendSQLite, Path: "/state/warden/warden.db"})
	check("", "TEAM_DB", Locator{Backend: BackendPostgres, URLEnv: "TEAM_DB"})
	env["WARDEN_DB"] = "postgres:ENV_DB"
	check("", "TEAM_DB", Locator{Backend: BackendPostgres, URLEnv: "ENV_DB"})
	check("sqlite:/flag.db", "TEAM_DB", Locator{Backend: BackendSQLite, Path: "/flag.db"})
	check("postgres", "TEAM_DB", Locator{Backend: BackendPostgres, URLEnv: "TEAM_DB"})
	env["WARDEN_DB"] = "postgres://u:pw@h/d"
	if _, err := Resolve("", "", getenv); !errors.Is(err, ErrPasswordInArgs) || !strings.Contains(err.Error(), "WARDEN_DB") {
		t.Errorf("a password in WARDEN_DB: %v", err)
	}
}

// Opening PostgreSQL never puts the password in an error: not for a
// missing variable, an unparsable URL, a refused connection or a wrong
// password.
func TestOpenPostgresErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const pw = "Hunter2-s3cret"
	admin, err := url.Parse(pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	wrongUser := *admin
	wrongUser.User = url.UserPassword("nosuchuser", pw)
	closedPort := *admin
	closedPort.User = url.UserPassword("postgres", pw)
	closedPort.Host = "127.0.0.1:1"
	tests := map[string]string{
		"unparsable URL":  "postgres://u:" + pw + "@[::1/db",
		"bad port":        "postgres://u:" + pw + "@host:notaport/db",
		"key=value":       "host=127.0.0.1 password=" + pw + " port=x",
		"refused":         closedPort.String(),
		"wrong user":      wrongUser.String(),
		"unknown sslmode": "postgres://u:" + pw + "@127.0.0.1/db?sslmode=bogus",
	}
	for name, u := range tests {
		env := func(string) string { return u }
		_, err := Open(ctx, Locator{Backend: BackendPostgres, URLEnv: "TEAM_DB"}, env, nil)
		if err == nil {
			t.Errorf("%s: opened", name)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the error holds the password: %v", name, err)
		}
	}
	_, err = Open(ctx, Locator{Backend: BackendPostgres, URLEnv: "TEAM_DB"}, func(string) string { return "" }, nil)
	if err == nil || !strings.Contains(err.Error(), "TEAM_DB") || !strings.Contains(err.Error(), "not set") {
		t.Errorf("unset variable: %v", err)
	}
}
