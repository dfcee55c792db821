package app

import "github.com/wardenhq/warden/internal/store"

// OpenStore opens the approvals and audit database db: "" means
// $WARDEN_DB, else $XDG_STATE_HOME/warden/warden.db (store.DefaultPath).
func OpenStore(db string) (*store.SQLite, error) {
	if db == "" {
		var err error
		if db, err = store.DefaultPath(); err != nil {
			return nil, err
		}
	}
	return store.OpenSQLite(db, nil)
}
