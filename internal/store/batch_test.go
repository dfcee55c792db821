package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/wardenhq/warden/internal/audit"
)

// Writers that share a transaction (inTxOpts' batches) keep their own
// outcome: a body that fails after writing leaves nothing, one that
// succeeds or returns a committed error keeps its rows, and the chain holds
// exactly the kept rows, in order.
func TestBatchedWritersKeepTheirOwnOutcome(t *testing.T) { eachBackend(t, testBatchedWriters) }

func testBatchedWriters(t *testing.T, b backend) {
	s := b.open(t, nil)
	ctx := context.Background()
	boom := errors.New("boom")
	const n = 60
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.inTx(ctx, "write "+strconv.Itoa(i), func(ctx context.Context, tx *sql.Tx) error {
				if _, err := s.append(ctx, tx, &audit.Record{Event: "note", Reason: strconv.Itoa(i)}); err != nil {
					return err
				}
				switch i % 3 {
				case 1:
					return boom // written, then failed: rolled back alone
				case 2:
					return committedError{fmt.Errorf("kept %d", i)}
				}
				return nil
			})
		})
	}
	wg.Wait()
	want := map[string]bool{}
	for i, err := range errs {
		switch i % 3 {
		case 0:
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
			want[strconv.Itoa(i)] = true
		case 1:
			if !errors.Is(err, boom) {
				t.Errorf("writer %d: %v, want boom", i, err)
			}
		case 2:
			if err == nil || err.Error() != fmt.Sprintf("kept %d", i) {
				t.Errorf("writer %d: %v, want its committed error", i, err)
			}
			want[strconv.Itoa(i)] = true
		}
	}
	rows, err := s.Audit(ctx, AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range rows {
		got[r.Record.Reason] = true
	}
	if len(got) != len(want) || len(rows) != len(want) {
		t.Fatalf("%d audit rows (%d distinct), want %d", len(rows), len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Errorf("row of writer %s missing", k)
		}
	}
	if _, _, err := s.VerifyAudit(ctx); err != nil {
		t.Fatal(err)
	}
}
