package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MinIDPrefix is the shortest prefix of a request or grant id accepted in
// its place (the page shows 8 characters).
const MinIDPrefix = 6

// ErrAmbiguous is what an *AmbiguousError matches with errors.Is.
var ErrAmbiguous = errors.New("id prefix is ambiguous")

// AmbiguousError is an id prefix that more than one request (or grant)
// starts with.
type AmbiguousError struct {
	What, Prefix string
	Matches      []string // the first few ids it matches
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("%s id %q is ambiguous: it starts %s; type more of it", e.What, e.Prefix, strings.Join(e.Matches, ", "))
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// ExpandID returns the id of the one request whose id starts with prefix
// (at least MinIDPrefix hexadecimal digits; a whole id is returned as it
// is). No match is ErrNotFound; more than one an *AmbiguousError.
func (s *DB) ExpandID(ctx context.Context, prefix string) (string, error) {
	return s.expandID(ctx, "approval request", "approvals", "request_id", prefix, ErrNotFound)
}

// ExpandGrantID is ExpandID for grants: no match is ErrGrantNotFound.
func (s *DB) ExpandGrantID(ctx context.Context, prefix string) (string, error) {
	return s.expandID(ctx, "grant", "grants", "grant_id", prefix, ErrGrantNotFound)
}

// idLen is the length of the ids warden makes (16 random bytes in hex).
const idLen = 32

func (s *DB) expandID(ctx context.Context, what, table, col, prefix string, notFound error) (string, error) {
	p := strings.ToLower(strings.TrimSpace(prefix))
	if len(p) < MinIDPrefix || len(p) > idLen || strings.Trim(p, "0123456789abcdef") != "" {
		if len(p) > 0 && len(p) < MinIDPrefix && strings.Trim(p, "0123456789abcdef") == "" {
			return "", fmt.Errorf("%s id %q is too short: give at least %d characters", what, prefix, MinIDPrefix)
		}
		// Not an id warden made: looked up as it is, so the error is
		// the usual "no such" one.
		return prefix, nil
	}
	if len(p) == idLen {
		return p, nil
	}
	// An exact comparison of the first characters: no pattern syntax, and
	// no collation (SQLite and PostgreSQL alike).
	rows, err := s.query(ctx, s.db, fmt.Sprintf("SELECT %s FROM %s WHERE substr(%s, 1, %d) = ? ORDER BY %s LIMIT 4", col, table, col, len(p), col), p)
	if err != nil {
		return "", fmt.Errorf("failed to look up %s id %s: %w", what, prefix, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("failed to look up %s id %s: %w", what, prefix, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("failed to look up %s id %s: %w", what, prefix, err)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%s %q: %w", what, prefix, notFound)
	case 1:
		return ids[0], nil
	}
	if len(ids) > 3 {
		ids = append(ids[:3], "…")
	}
	return "", &AmbiguousError{What: what, Prefix: prefix, Matches: ids}
}
