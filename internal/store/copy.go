package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// ErrTargetNotEmpty refuses to copy into a database that already holds
// requests, grants or audit rows: merging two audit chains would break
// both, and copying twice would duplicate nothing but prove nothing.
var ErrTargetNotEmpty = errors.New("the target database is not empty")

// CopyReport is what Copy moved, and the audit chain it verified on the
// target.
type CopyReport struct {
	Requests, Grants, Leases, AuditRows int64
	// Head is the hash of the last audit row, equal on both databases.
	Head string
}

// Copy copies every request, grant, lease and audit row of from into to,
// which must be empty, in one transaction on to, keeping ids, change
// sequences and hashes; then it verifies the audit chain on to and checks
// that it ends at the same hash as from's. from should not be written
// meanwhile (stop the processes that use it): Copy reads it in one read
// transaction, so what it copies is consistent, but later writes to from
// are not copied.
//
// Open requests are copied as they are; their callers' leases are copied
// too and run out, so any process on to cancels them (their callers were
// waiting on from).
func Copy(ctx context.Context, from, to *DB) (*CopyReport, error) {
	if n, err := to.rowCounts(ctx); err != nil {
		return nil, err
	} else if n > 0 {
		return nil, fmt.Errorf("copy into %s: %w (%d rows): copy into a new, empty database", to.where, ErrTargetNotEmpty, n)
	}
	srcRows, srcHead, err := from.VerifyAudit(ctx)
	if err != nil {
		return nil, fmt.Errorf("the audit chain of %s does not verify, refusing to copy it: %w", from.where, err)
	}
	src, err := from.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: from.backend == BackendPostgres})
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", from.where, err)
	}
	defer src.Rollback()
	rep := &CopyReport{}
	err = to.inTx(ctx, "copy into "+to.where, func(ctx context.Context, tx *sql.Tx) error {
		// The target was empty a moment ago; under the writers' lock it
		// must still be.
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM approvals) + (SELECT COUNT(*) FROM grants) + (SELECT COUNT(*) FROM audit)").Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w (%d rows written meanwhile)", ErrTargetNotEmpty, n)
		}
		for _, t := range []struct {
			table, cols string
			count       *int64
		}{
			{"approvals", approvalCols, &rep.Requests},
			{"grants", grantCols, &rep.Grants},
			{"leases", "lease_id, host, pid, start, acquired_at, renewed_at, expires_at", &rep.Leases},
			{"audit", auditCols, &rep.AuditRows},
		} {
			c, err := copyTable(ctx, src, tx, to, t.table, t.cols)
			if err != nil {
				return fmt.Errorf("copy %s: %w", t.table, err)
			}
			*t.count = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows, head, err := to.VerifyAudit(ctx)
	if err != nil {
		return rep, fmt.Errorf("the audit chain copied into %s does not verify: %w", to.where, err)
	}
	if rows != srcRows || head != srcHead {
		return rep, fmt.Errorf("the audit chain copied into %s ends at row %d, hash %s; %s ends at row %d, hash %s",
			to.where, rows, head, from.where, srcRows, srcHead)
	}
	rep.Head = head
	return rep, nil
}

// rowCounts is how many requests, grants and audit rows s holds.
func (s *DB) rowCounts(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM approvals) + (SELECT COUNT(*) FROM grants) + (SELECT COUNT(*) FROM audit)").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("failed to count the rows of %s: %w", s.where, err)
	}
	return n, nil
}

// copyTable copies every row of table (columns cols, in primary key order)
// from src into dst, a transaction of to.
func copyTable(ctx context.Context, src, dst *sql.Tx, to *DB, table, cols string) (int64, error) {
	ncols := len(splitCols(cols))
	rows, err := src.QueryContext(ctx, "SELECT "+cols+" FROM "+table+" ORDER BY 1")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	marks := "?"
	for range ncols - 1 {
		marks += ", ?"
	}
	ins, err := dst.PrepareContext(ctx, to.Rebind("INSERT INTO "+table+" ("+cols+") VALUES ("+marks+")"))
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	vals := make([]any, ncols)
	ptrs := make([]any, ncols)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b) // SQLite hands TEXT back as bytes in some paths
			}
		}
		if _, err := ins.ExecContext(ctx, vals...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

func splitCols(cols string) []string {
	var out []string
	for _, c := range strings.Split(cols, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}
