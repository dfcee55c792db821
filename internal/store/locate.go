package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// DefaultURLEnv is the environment variable that holds the PostgreSQL URL
// when neither the configuration ([store] url_env) nor --db names another.
const DefaultURLEnv = "WARDEN_DATABASE_URL"

// Locator says which database to open, without holding a secret: a SQLite
// file, or PostgreSQL with its URL in an environment variable (URLEnv), or
// a URL that carries no password (URL).
type Locator struct {
	Backend Backend
	Path    string // SQLite
	URLEnv  string // PostgreSQL: the variable that holds the URL
	URL     string // PostgreSQL: a URL given whole, never with a password
}

func (l Locator) String() string {
	switch {
	case l.Backend == BackendSQLite:
		return "sqlite:" + l.Path
	case l.URLEnv != "":
		return "postgres:" + l.URLEnv
	}
	return l.URL
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ErrPasswordInArgs refuses a PostgreSQL URL with a password where every
// local user can read it (the command line: ps, /proc/PID/cmdline).
var ErrPasswordInArgs = errors.New("a database password on the command line is visible to every local user (ps, /proc/PID/cmdline)")

// ParseLocator reads a database named on the command line (--db) or in
// $WARDEN_DB:
//
//	PATH, sqlite:PATH        a SQLite file
//	postgres                 PostgreSQL, URL in $defaultEnv ([store] url_env, else WARDEN_DATABASE_URL)
//	postgres:NAME            PostgreSQL, URL in $NAME
//	postgres://… without a password (peer, certificate or ~/.pgpass authentication)
//
// A URL with a password is refused with ErrPasswordInArgs: put it in an
// environment variable and name the variable.
func ParseLocator(s, defaultEnv string) (Locator, error) {
	if defaultEnv == "" {
		defaultEnv = DefaultURLEnv
	}
	switch {
	case s == "":
		return Locator{}, errors.New("empty database name")
	case s == "postgres" || s == "postgresql":
		return Locator{Backend: BackendPostgres, URLEnv: defaultEnv}, nil
	case strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://"):
		if hasPassword(s) {
			return Locator{}, fmt.Errorf("--db: %w; set it in an environment variable (export %s='postgres://…') and pass --db postgres:%s",
				ErrPasswordInArgs, defaultEnv, defaultEnv)
		}
		if _, err := url.Parse(s); err != nil {
			return Locator{}, fmt.Errorf("--db: %w", ErrBadURL)
		}
		return Locator{Backend: BackendPostgres, URL: s}, nil
	case strings.HasPrefix(s, "postgres:") || strings.HasPrefix(s, "postgresql:"):
		_, name, _ := strings.Cut(s, ":")
		if !envName.MatchString(name) {
			return Locator{}, fmt.Errorf("--db %s: after postgres: comes the name of the environment variable that holds the URL (like postgres:%s), not %q",
				redactArg(s), DefaultURLEnv, redactArg(name))
		}
		return Locator{Backend: BackendPostgres, URLEnv: name}, nil
	case strings.HasPrefix(s, "sqlite:"):
		p := strings.TrimPrefix(s, "sqlite:")
		if p == "" {
			return Locator{}, errors.New("--db sqlite: names no file")
		}
		return Locator{Backend: BackendSQLite, Path: p}, nil
	case strings.Contains(s, "password="):
		return Locator{}, fmt.Errorf("--db: %w; put the connection string in an environment variable and pass --db postgres:NAME", ErrPasswordInArgs)
	case strings.Contains(s, "host=") || strings.Contains(s, "dbname="):
		return Locator{}, fmt.Errorf("--db %q looks like a PostgreSQL connection string: put it in an environment variable and pass --db postgres:NAME", redactArg(s))
	}
	return Locator{Backend: BackendSQLite, Path: s}, nil
}

// hasPassword reports whether a postgres URL carries a password, in its
// user info or as a password= parameter.
func hasPassword(s string) bool {
	if strings.Contains(strings.ToLower(s), "password=") {
		return true
	}
	u, err := url.Parse(s)
	if err != nil {
		// An unparsable URL may still hold one: judge the text before the host.
		rest := s[strings.Index(s, "://")+3:]
		at := strings.LastIndex(rest, "@")
		return at >= 0 && strings.Contains(rest[:at], ":")
	}
	_, set := u.User.Password()
	return set
}

// redactArg cuts a command-line value that was not understood, so an
// error does not repeat a secret typed in the wrong place.
func redactArg(s string) string {
	if len(s) > 24 {
		return s[:12] + "…"
	}
	return s
}

// Resolve picks the database: --db (flag), else $WARDEN_DB, else the
// configuration's [store] url_env (PostgreSQL), else the SQLite file at
// DefaultPath.
func Resolve(flag, urlEnv string, getenv func(string) string) (Locator, error) {
	if flag != "" {
		return ParseLocator(flag, urlEnv)
	}
	if v := getenv("WARDEN_DB"); v != "" {
		l, err := ParseLocator(v, urlEnv)
		if err != nil {
			return Locator{}, fmt.Errorf("WARDEN_DB: %w", err)
		}
		return l, nil
	}
	if urlEnv != "" {
		return Locator{Backend: BackendPostgres, URLEnv: urlEnv}, nil
	}
	p, err := DefaultPath()
	if err != nil {
		return Locator{}, err
	}
	return Locator{Backend: BackendSQLite, Path: p}, nil
}

// Open opens the database l names; getenv reads the variable that holds a
// PostgreSQL URL.
func Open(ctx context.Context, l Locator, getenv func(string) string, opts *Options) (*DB, error) {
	switch l.Backend {
	case BackendSQLite:
		return OpenSQLite(l.Path, opts)
	case BackendPostgres:
		u := l.URL
		if l.URLEnv != "" {
			if u = getenv(l.URLEnv); u == "" {
				return nil, fmt.Errorf("failed to open the store: the environment variable %s, which should hold the PostgreSQL URL (postgres://user:password@host:5432/db), is not set", l.URLEnv)
			}
		}
		db, err := OpenPostgres(ctx, u, opts)
		if err != nil && l.URLEnv != "" && errors.Is(err, ErrBadURL) {
			return nil, fmt.Errorf("%w (the value of %s)", err, l.URLEnv)
		}
		return db, err
	}
	return nil, fmt.Errorf("failed to open the store: unknown backend %q", l.Backend)
}
