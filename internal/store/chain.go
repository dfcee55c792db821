package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

// GenesisHash is the prev_hash of the first audit row.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// ChainHash is the hash of one audit row: SHA-256 over the previous row's
// hash and every stored column of the row, each length-prefixed so no two
// rows can encode the same bytes.
func ChainHash(prev string, id, timeMS int64, event, requestID, record string) string {
	h := sha256.New()
	for _, f := range []string{prev, strconv.FormatInt(id, 10), strconv.FormatInt(timeMS, 10), event, requestID, record} {
		h.Write([]byte(strconv.Itoa(len(f))))
		h.Write([]byte{':'})
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AppendAudit implements Store.
func (s *DB) AppendAudit(ctx context.Context, rec *audit.Record) (*AuditRow, error) {
	var row *AuditRow
	err := s.inTxOpts(ctx, "append an audit record", txOpts{cleanRefusals: true}, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		row, err = s.append(ctx, tx, rec)
		return err
	})
	return row, err
}

// Write makes the store an audit.Sink.
func (s *DB) Write(ctx context.Context, rec *audit.Record) error {
	_, err := s.AppendAudit(ctx, rec)
	return err
}

var _ audit.Sink = (*DB)(nil)

func (s *DB) appendIn(ctx context.Context, tx *sql.Tx, requestID string, rec *audit.Record) error {
	if rec == nil {
		return nil
	}
	r := *rec
	r.RequestID = requestID
	_, err := s.append(ctx, tx, &r)
	return err
}

func (s *DB) append(ctx context.Context, tx *sql.Tx, rec *audit.Record) (*AuditRow, error) {
	row, body, err := s.nextAuditRow(ctx, tx, rec)
	if err != nil {
		return nil, err
	}
	_, err = s.exec(ctx, tx, "INSERT INTO audit (id, time, event, request_id, record, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
		row.auditArgs(body)...)
	if err != nil {
		return nil, fmt.Errorf("failed to append audit row %d: %w", row.ID, err)
	}
	s.appended(tx, row)
	return row, nil
}

// nextAuditRow returns rec as the row that would follow the chain's head
// in tx, and its encoded record, without inserting it. Its hash is final:
// the caller inserts it (auditArgs) and then calls appended, in tx, which
// holds the writers' lock.
func (s *DB) nextAuditRow(ctx context.Context, tx *sql.Tx, rec *audit.Record) (*AuditRow, string, error) {
	prev, last := GenesisHash, int64(0)
	if s.head.tx == tx {
		// Appended earlier in this transaction, which holds the writers'
		// lock: nobody else can have moved the head.
		last, prev = s.head.id, s.head.hash
	} else {
		err := s.queryRow(ctx, tx, "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1").Scan(&last, &prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, "", fmt.Errorf("failed to read the audit chain head: %w", err)
		}
	}
	r := *rec
	if r.Time.IsZero() {
		r.Time = s.now()
	}
	r.Time = r.Time.UTC()
	body, err := json.Marshal(&r)
	if err != nil {
		return nil, "", fmt.Errorf("failed to encode the audit record: %w", err)
	}
	id, ms := last+1, r.Time.UnixMilli()
	hash := ChainHash(prev, id, ms, r.Event, r.RequestID, string(body))
	return &AuditRow{ID: id, Time: time.UnixMilli(ms).UTC(), Record: r, PrevHash: prev, Hash: hash}, string(body), nil
}

// auditArgs are the values of row's columns, in auditCols' order.
func (row *AuditRow) auditArgs(body string) []any {
	return []any{row.ID, row.Time.UnixMilli(), row.Record.Event, row.Record.RequestID, body, row.PrevHash, row.Hash}
}

// appended records row as the chain's head in tx.
func (s *DB) appended(tx *sql.Tx, row *AuditRow) {
	s.head.tx, s.head.id, s.head.hash = tx, row.ID, row.Hash
}

const auditCols = "id, time, event, request_id, record, prev_hash, hash"

type rawAudit struct {
	id, ms                       int64
	event, reqID, body, prev, hs string
}

func scanRawAudit(rows *sql.Rows) (rawAudit, error) {
	var r rawAudit
	err := rows.Scan(&r.id, &r.ms, &r.event, &r.reqID, &r.body, &r.prev, &r.hs)
	return r, err
}

// Audit implements Store.
func (s *DB) Audit(ctx context.Context, f AuditFilter) ([]*AuditRow, error) {
	q := "SELECT " + auditCols + " FROM audit WHERE id > ?"
	args := []any{f.After}
	if f.Event != "" {
		q += " AND event = ?"
		args = append(args, f.Event)
	}
	if f.Last > 0 {
		q = "SELECT * FROM (" + q + fmt.Sprintf(" ORDER BY id DESC LIMIT %d", f.Last) + ") AS last_rows ORDER BY id"
	} else {
		q += " ORDER BY id"
	}
	rows, err := s.query(ctx, s.db, q, args...)
	if err != nil {
		return nil, fmt.Errorf("failed to read the audit trail: %w", err)
	}
	defer rows.Close()
	var out []*AuditRow
	for rows.Next() {
		r, err := scanRawAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("failed to read the audit trail: %w", err)
		}
		row := &AuditRow{ID: r.id, Time: time.UnixMilli(r.ms).UTC(), PrevHash: r.prev, Hash: r.hs}
		if err := json.Unmarshal([]byte(r.body), &row.Record); err != nil {
			return nil, fmt.Errorf("failed to decode audit row %d: %w", r.id, err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the audit trail: %w", err)
	}
	return out, nil
}

// VerifyAudit implements Store.
func (s *DB) VerifyAudit(ctx context.Context) (int64, string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+auditCols+" FROM audit ORDER BY id")
	if err != nil {
		return 0, "", fmt.Errorf("failed to read the audit trail: %w", err)
	}
	defer rows.Close()
	prev, want, n := GenesisHash, int64(1), int64(0)
	for rows.Next() {
		r, err := scanRawAudit(rows)
		if err != nil {
			return n, "", fmt.Errorf("failed to read the audit trail: %w", err)
		}
		switch {
		case r.id != want:
			return n, "", &ChainError{Row: r.id, Why: fmt.Sprintf("expected row %d here: rows are missing", want)}
		case r.prev != prev:
			return n, "", &ChainError{Row: r.id, Why: "its prev_hash is not the previous row's hash (a row before it was changed, removed or inserted)"}
		case ChainHash(prev, r.id, r.ms, r.event, r.reqID, r.body) != r.hs:
			return n, "", &ChainError{Row: r.id, Why: "its content does not match its hash (the row was edited)"}
		}
		var rec audit.Record
		if err := json.Unmarshal([]byte(r.body), &rec); err != nil {
			return n, "", &ChainError{Row: r.id, Why: "its record is not valid JSON: " + err.Error()}
		}
		prev, want, n = r.hs, r.id+1, n+1
	}
	if err := rows.Err(); err != nil {
		return n, "", fmt.Errorf("failed to read the audit trail: %w", err)
	}
	return n, prev, nil
}
