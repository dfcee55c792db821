package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A database at schema version 3 gains the index of requests by call
// (version 4) when a newer warden opens it, keeps its requests, and looking
// requests up by call uses the index.
func TestMigrateArgsHashIndex(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		l := b.locate(t)
		s := openAt(t, l, nil)
		a := newPending(time.Hour, CurrentOwner())
		if err := s.Create(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		// Back to version 3, as a warden before this index left it.
		rawExec(t, s, "DROP INDEX approvals_args_hash")
		rawExec(t, s, "DELETE FROM schema_migrations WHERE version = 4")
		if b.name == "sqlite" {
			rawExec(t, s, "PRAGMA user_version = 3")
		}
		if hasArgsHashIndex(t, s) {
			t.Fatal("the index survived its drop")
		}
		s.Close()

		s = openAt(t, l, nil)
		if !hasArgsHashIndex(t, s) {
			t.Fatal("no index on approvals.args_hash after the migration")
		}
		vs, err := s.SchemaVersions(ctx)
		if err != nil || len(vs) == 0 || vs[len(vs)-1] != 4 {
			t.Fatalf("schema versions %v, %v", vs, err)
		}
		got, err := s.List(ctx, Filter{ArgsHash: a.ArgsHash, State: Pending, Limit: 10})
		if err != nil || len(got) != 1 || got[0].ID != a.ID {
			t.Fatalf("List by args hash: %v, %v", got, err)
		}
		if b.name == "sqlite" {
			// The planner's choice, on the store's own query.
			rows, err := s.DB().Query("EXPLAIN QUERY PLAN SELECT request_id FROM approvals WHERE args_hash = ? ORDER BY created_at DESC, seq DESC LIMIT 10", a.ArgsHash)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan strings.Builder
			for rows.Next() {
				var id, parent, unused int
				var detail string
				rows.Scan(&id, &parent, &unused, &detail)
				plan.WriteString(detail + "\n")
			}
			if !strings.Contains(plan.String(), "approvals_args_hash") {
				t.Errorf("listing by args hash does not use the index:\n%s", plan.String())
			}
		}
	})
}

func hasArgsHashIndex(t *testing.T, s *DB) bool {
	t.Helper()
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'approvals_args_hash'"
	if s.Backend() == BackendPostgres {
		q = "SELECT count(*) FROM pg_indexes WHERE tablename = 'approvals' AND indexname = 'approvals_args_hash'"
	}
	var n int
	if err := rawQueryRow(s, q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}
