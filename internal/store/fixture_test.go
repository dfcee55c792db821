package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wardenhq/warden/internal/store/pgtest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	pgtest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// backend opens fresh stores of one kind: the conformance suite below runs
// every test of the Store contract through each backend, as
// testing/fstest.TestFS runs one suite over every file system.
type backend struct {
	name string
	// open returns a new, empty store, closed when t ends.
	open func(t testing.TB, o *Options) *DB
	// locate returns a new, empty database that several stores (or
	// processes) can open: a SQLite file or a PostgreSQL database.
	locate func(t testing.TB) Locator
}

var backends = []backend{
	{
		name: "sqlite",
		locate: func(t testing.TB) Locator {
			return Locator{Backend: BackendSQLite, Path: filepath.Join(t.TempDir(), "warden.db")}
		},
	},
	{
		name: "postgres",
		locate: func(t testing.TB) Locator {
			return Locator{Backend: BackendPostgres, URL: pgtest.URL(t)}
		},
	},
}

func init() {
	for i := range backends {
		b := &backends[i]
		b.open = func(t testing.TB, o *Options) *DB {
			t.Helper()
			return openAt(t, b.locate(t), o)
		}
	}
}

// openAt opens the database l, closed when t ends.
func openAt(t testing.TB, l Locator, o *Options) *DB {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.MaxConns == 0 {
		o.MaxConns = 8
	}
	s, err := Open(context.Background(), l, os.Getenv, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eachBackend runs f once per backend, in parallel subtests.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// openClocked returns a new store of b on a settable clock.
func (b backend) openClocked(t *testing.T) (*DB, *clock) {
	t.Helper()
	c := &clock{t: time.Now()}
	return b.open(t, &Options{Now: c.now}), c
}

// rawExec runs a '?' statement on s's database, bypassing the store.
func rawExec(t *testing.T, s *DB, q string, args ...any) sql.Result {
	t.Helper()
	res, err := s.DB().Exec(s.Rebind(q), args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

func rawQueryRow(s *DB, q string, args ...any) *sql.Row {
	return s.DB().QueryRow(s.Rebind(q), args...)
}
