package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/wardenhq/warden/internal/store"
)

// pendingView is this server's copy of the pending requests, newest first,
// kept up to date from the store's change feed (the hub's read of
// Store.Changes, woken by every write of any process: this one's at once,
// another's by LISTEN/NOTIFY on PostgreSQL or the store's poll on SQLite),
// so that listing them reads no row and encodes no JSON on each call.
//
// It is exact, not a cache with an age: the change feed hands every change
// of every request, in order, with the row as it is now (writers are
// serialised, so sequences commit in order), and a row the feed hands
// replaces the view's copy only when its sequence is newer. A request
// created by another process is therefore missing from it for as long as
// the event stream would miss it (at most the store's poll on SQLite, one
// notification on PostgreSQL, the hub's poll if a notification is lost).
// A write of this process is in it before the next list answers (the list
// reads the feed first when the store's count of this process's writes
// moved: hub.catchUp), and a decision made through this server is applied
// at once, so whoever decided never sees the request pending again. While the feed cannot be
// read the view is not used (lists go to the database), and it resumes
// from the last position read, losing nothing. Deciding never trusts it:
// the store's conditional update decides, and a stale list only costs the
// client a 409.
//
// The view is this process's memory: nothing of it outlives a restart,
// and every supervisor sees every request (the API has no per-supervisor
// scope; a scope would have to key the encoded answers by it).
type pendingView struct {
	mu    sync.Mutex
	ready bool // loaded, and the last read of the feed succeeded
	// rows holds the pending requests in List's order: newest created
	// first, ties by sequence, newest first.
	rows []*viewRow
	byID map[string]*viewRow
	// gone holds the sequence at which a request stopped being pending
	// when a decision of this server removed it before the feed reached
	// that change: an older row the feed hands meanwhile must not bring
	// it back. Entries the feed has passed are dropped.
	gone map[string]int64
	// version counts changes; body caches the last answer encoded.
	version  uint64
	body     []byte
	bodyVer  uint64
	bodyN    int
	bodyHave bool
	// overflow: more than maxViewRows were pending; the view stays unused.
	overflow bool
}

// maxViewRows bounds the view's memory. Past it the view lets go of its
// rows and lists go to the database until the server restarts: callers that
// keep that many requests waiting must not make a server hold them all.
const maxViewRows = 10000

type viewRow struct {
	a    *store.Approval
	json []byte // a, as writeJSON encodes it, without the newline
}

func newPendingView() *pendingView {
	return &pendingView{byID: map[string]*viewRow{}, gone: map[string]int64{}}
}

// load fills the view from the store: the change head first, then every
// pending request, so the feed read from that head (Changes after it)
// replays whatever the list missed or saw early; replaying is harmless
// since only newer rows replace older ones.
func (v *pendingView) load(ctx context.Context, st store.Store) (head int64, err error) {
	head, err = st.ChangeHead(ctx)
	if err != nil {
		return 0, err
	}
	list, err := st.List(ctx, store.Filter{State: store.Pending, Limit: maxViewRows + 1})
	if err != nil {
		return 0, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, a := range list {
		v.applyLocked(a)
	}
	v.ready = true
	return head, nil
}

// less orders rows as List does: created_at descending, then seq
// descending (created_at is stored in milliseconds).
func less(a, b *store.Approval) bool {
	ca, cb := a.CreatedAt.UnixMilli(), b.CreatedAt.UnixMilli()
	if ca != cb {
		return ca > cb
	}
	return a.Seq > b.Seq
}

func (v *pendingView) index(a *store.Approval) int {
	i, _ := slices.BinarySearchFunc(v.rows, a, func(r *viewRow, t *store.Approval) int {
		switch {
		case less(r.a, t):
			return -1
		case less(t, r.a):
			return 1
		}
		return 0
	})
	return i
}

// apply takes a request's row as it is after a change (from the feed, or
// the answer of a decision made here).
func (v *pendingView) apply(a *store.Approval) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.applyLocked(a)
}

// applyDecided takes the row a decision of this server returned.
func (v *pendingView) applyDecided(a *store.Approval) {
	if a == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.applyLocked(a) && a.State != store.Pending {
		v.gone[a.ID] = a.Seq
	}
}

// applyLocked reports whether a was newer than what the view knew.
func (v *pendingView) applyLocked(a *store.Approval) bool {
	if v.overflow {
		return false
	}
	if seq, ok := v.gone[a.ID]; ok && a.Seq <= seq {
		return false
	}
	old := v.byID[a.ID]
	if old != nil {
		if a.Seq <= old.a.Seq {
			return false
		}
		i := v.index(old.a)
		v.rows = slices.Delete(v.rows, i, i+1)
		delete(v.byID, a.ID)
	}
	v.version++
	if a.State != store.Pending {
		return true
	}
	// A row that does not encode (its args are not JSON) keeps a nil
	// encoding, and an answer that would include it is left to the
	// database path, which reports the error as it always did.
	data, _ := json.Marshal(a)
	r := &viewRow{a: a, json: data}
	i := v.index(a)
	v.rows = slices.Insert(v.rows, i, r)
	v.byID[a.ID] = r
	if len(v.rows) > maxViewRows && !v.overflow {
		v.overflow = true
		v.rows, v.byID, v.body = nil, map[string]*viewRow{}, nil
	}
	return true
}

// fed records a read of the feed up to sequence after (ok), or a failed
// one: until the next good read, the view is not used.
func (v *pendingView) fed(after int64, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !ok {
		v.ready = false
		return
	}
	v.ready = true
	for id, seq := range v.gone {
		if seq <= after {
			delete(v.gone, id)
		}
	}
}

// answer returns the body of GET /api/approvals?status=pending&limit=n as
// writeJSON would encode it, or false when the view cannot answer.
func (v *pendingView) answer(n int) ([]byte, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.ready || v.overflow {
		return nil, false
	}
	if v.bodyHave && v.bodyVer == v.version && v.bodyN == n {
		return v.body, true
	}
	var b bytes.Buffer
	b.WriteString(`{"approvals":[`)
	for i, r := range v.rows[:min(n, len(v.rows))] {
		if r.json == nil {
			return nil, false
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.json)
	}
	b.WriteString("]}\n")
	// The body is shared by the callers that get it: never written to.
	v.body, v.bodyVer, v.bodyN, v.bodyHave = b.Bytes(), v.version, n, true
	return v.body, true
}
