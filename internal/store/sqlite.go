package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// DefaultPath is where the database lives: $WARDEN_DB, else
// $XDG_STATE_HOME/warden/warden.db, else ~/.local/state/warden/warden.db.
func DefaultPath() (string, error) {
	if p := os.Getenv("WARDEN_DB"); p != "" {
		return p, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "warden", "warden.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("failed to find the state directory: %w (set WARDEN_DB or XDG_STATE_HOME)", err)
	}
	return filepath.Join(home, ".local", "state", "warden", "warden.db"), nil
}

// OpenSQLite opens (creating if needed) the database at path, or an
// in-memory database for ":memory:", and brings its schema up to date.
func OpenSQLite(path string, opts *Options) (*DB, error) {
	opts = opts.orDefault()
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	if path == "" {
		return nil, errors.New("failed to open the store: empty database path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("failed to open the store: database path %q contains '?' or '#'", path)
	}
	memory := path == ":memory:"
	q := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_txlock=immediate", busy.Milliseconds())
	if !memory {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("failed to create the state directory: %w", err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("failed to open the store: %w", err)
		}
		f.Close()
		q += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	db, err := sql.Open("sqlite", path+"?"+q)
	if err != nil {
		return nil, fmt.Errorf("failed to open the store %s: %w", path, err)
	}
	if memory {
		// Each connection to ":memory:" is its own database.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
	}
	s := &DB{db: db, now: now, path: path, where: path, backend: BackendSQLite, writer: make(chan struct{}, 1)}
	s.watch = newWatcher(s, poll, nil)
	// Processes that open a new database together race to switch it to
	// WAL, and SQLite answers the loser "busy" without waiting its busy
	// timeout: try again within that timeout.
	deadline := time.Now().Add(busy)
	for {
		err = s.migrate(context.Background())
		if err == nil {
			return s, nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			db.Close()
			return nil, err
		}
		time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (database is locked).
func isBusy(err error) bool {
	var se interface{ Code() int }
	return errors.As(err, &se) && se.Code()&0xff == 5
}
