package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

// Writers that share a transaction (inTxOpts' batches) keep their own
// outcome: a body that fails after writing leaves nothing (whether its
// error is its own or a failed statement's, which aborts the whole
// transaction on PostgreSQL), one that refuses leaves nothing, one that
// succeeds or returns a committed error keeps its rows, and the chain holds
// exactly the kept rows, in order. Bodies declared to refuse without
// writing (txOpts.cleanRefusals) run without savepoints, and the batch runs
// again with them when one fails otherwise.
func TestBatchedWritersKeepTheirOwnOutcome(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for _, clean := range []bool{false, true} {
			t.Run(fmt.Sprintf("cleanRefusals=%v", clean), func(t *testing.T) { testBatchedWriters(t, b, clean) })
		}
	})
}

func testBatchedWriters(t *testing.T, b backend, clean bool) {
	s := b.open(t, nil)
	ctx := context.Background()
	boom := errors.New("boom")
	const n = 60
	errs := make([]error, n)
	// Hold the write slot until every writer is queued: they then run as
	// one batch.
	s.writer <- struct{}{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.inTxOpts(ctx, "write "+strconv.Itoa(i), txOpts{cleanRefusals: clean}, func(ctx context.Context, tx *sql.Tx) error {
				if i%5 == 3 {
					return ErrNotFound // refused before writing anything
				}
				if _, err := s.append(ctx, tx, &audit.Record{Event: "note", Reason: strconv.Itoa(i)}); err != nil {
					return err
				}
				switch i % 5 {
				case 1:
					return boom // written, then failed: rolled back alone
				case 2:
					return committedError{fmt.Errorf("kept %d", i)}
				case 4: // written, then a statement fails
					_, err := s.exec(ctx, tx, "INSERT INTO no_such_table VALUES (1)")
					return err
				}
				return nil
			})
		})
	}
	for {
		s.queueMu.Lock()
		queued := len(s.queue)
		s.queueMu.Unlock()
		if queued == n {
			break
		}
		time.Sleep(time.Millisecond)
	}
	<-s.writer
	wg.Wait()
	want := map[string]bool{}
	for i, err := range errs {
		switch i % 5 {
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
		case 3:
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("writer %d: %v, want ErrNotFound", i, err)
			}
		case 4:
			if err == nil || !strings.Contains(err.Error(), "no_such_table") {
				t.Errorf("writer %d: %v, want the failed statement's error", i, err)
			}
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
