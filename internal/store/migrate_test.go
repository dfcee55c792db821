package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A database at schema version 3 gains the indexes of version 4 (requests
// by call; requests by state in List's order) when a newer warden opens it,
// keeps its requests, and listing uses them.
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
		rawExec(t, s, "DROP INDEX approvals_state_order")
		rawExec(t, s, "CREATE INDEX approvals_state ON approvals(state, created_at)")
		rawExec(t, s, "DELETE FROM schema_migrations WHERE version = 4")
		if b.name == "sqlite" {
			rawExec(t, s, "PRAGMA user_version = 3")
		}
		if hasIndex(t, s, "approvals_args_hash") || !hasIndex(t, s, "approvals_state") {
			t.Fatal("not at version 3")
		}
		s.Close()

		s = openAt(t, l, nil)
		if !hasIndex(t, s, "approvals_args_hash") || !hasIndex(t, s, "approvals_state_order") || hasIndex(t, s, "approvals_state") {
			t.Fatal("the indexes are not those of version 4 after the migration")
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
			// The planner's choices, on the store's own queries: each
			// list reads an index in List's order, with no sort.
			for where, index := range map[string]string{"args_hash = 'h'": "approvals_args_hash", "state = 'PENDING'": "approvals_state_order"} {
				plan := queryPlan(t, s, "SELECT request_id FROM approvals WHERE "+where+" ORDER BY created_at DESC, seq DESC LIMIT 10")
				if !strings.Contains(plan, "USING INDEX "+index) || strings.Contains(plan, "TEMP B-TREE") {
					t.Errorf("listing by %s: plan\n%s", where, plan)
				}
			}
		}
	})
}

func hasIndex(t *testing.T, s *DB, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
	if s.Backend() == BackendPostgres {
		q = "SELECT count(*) FROM pg_indexes WHERE tablename = 'approvals' AND indexname = ?"
	}
	var n int
	if err := rawQueryRow(s, q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func queryPlan(t *testing.T, s *DB, q string) string {
	t.Helper()
	rows, err := s.DB().Query("EXPLAIN QUERY PLAN " + q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	return plan.String()
}
