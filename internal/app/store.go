package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// OpenStore opens the approvals and audit database: db (--db) if given,
// else $WARDEN_DB, else PostgreSQL when [store] url_env names the variable
// holding its URL, else the SQLite file $XDG_STATE_HOME/warden/warden.db.
// When the managed policy pins the store (sc.Pinned), db and WARDEN_DB may
// only name that same database.
func OpenStore(db string, sc config.Store) (*store.DB, error) {
	loc, err := store.Resolve(db, sc.URLEnv, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("the approvals database: %w", err)
	}
	if sc.Pinned != "" && (loc.Backend != store.BackendPostgres || loc.URLEnv != sc.URLEnv) {
		return nil, fmt.Errorf("the managed policy %s fixes the approvals database to postgres:%s; %s names %s: only the administrator may move it",
			sc.Pinned, sc.URLEnv, storeSource(db), loc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return store.Open(ctx, loc, os.Getenv, nil)
}

func storeSource(db string) string {
	if db != "" {
		return "--db"
	}
	return "WARDEN_DB"
}

// LeaseTTL is how long a waiting caller's lease lasts ([store] lease_secs).
func LeaseTTL(sc config.Store) time.Duration {
	if sc.LeaseSecs <= 0 {
		return store.DefaultLeaseTTL
	}
	return time.Duration(sc.LeaseSecs) * time.Second
}
