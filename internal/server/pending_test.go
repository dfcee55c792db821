package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

// replica is a second server on the fixture's database, through its own
// store handle, as another `warden serve` process would be: it sees the
// fixture's writes only through the change feed (the store's poll).
func (f *fixture) replica(t *testing.T) (*httptest.Server, *store.SQLite) {
	t.Helper()
	st, err := store.OpenSQLite(f.st.Path(), &store.Options{Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, srv := serveOn(t, st, time.Second)
	return srv, st
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+aliceTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return body
}

func pendingIDs(t *testing.T, base string, limit int) []string {
	t.Helper()
	var out struct{ Approvals []store.Approval }
	if err := json.Unmarshal(get(t, fmt.Sprintf("%s/api/approvals?status=pending&limit=%d", base, limit)), &out); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, a := range out.Approvals {
		ids = append(ids, a.ID)
	}
	return ids
}

// fromDB is the answer the database path gives, encoded as the handler
// encodes it.
func fromDB(t *testing.T, st store.Store, limit int) []byte {
	t.Helper()
	list, err := st.List(t.Context(), store.Filter{State: store.Pending, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	if list == nil {
		list = []*store.Approval{}
	}
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, map[string]any{"approvals": list})
	return rec.Body.Bytes()
}

// eventually retries cond for up to a second: the bound a change of
// another process may take to reach the view here (the store's poll is
// 50 ms by default, 20 ms in replica).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 1 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPendingViewMatchesDatabase: after random creates and decisions, by
// this server, through its store (as a local caller does) and by another
// process, the view's answer is byte for byte the database's, for every
// limit, once the feed has caught up.
func TestPendingViewMatchesDatabase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other, err := store.OpenSQLite(f.st.Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherFix := &fixture{st: other}
	var ids []string
	for round := range 8 {
		for range 1 + rand.IntN(20) {
			if rand.IntN(2) == 0 {
				ids = append(ids, f.newRequest(t))
			} else {
				ids = append(ids, otherFix.newRequest(t))
			}
		}
		for range rand.IntN(10) {
			id := ids[rand.IntN(len(ids))]
			switch rand.IntN(3) {
			case 0:
				f.do(t, "POST", "/api/approvals/"+id+"/approve", "Bearer "+aliceTok, "")
			case 1:
				f.do(t, "POST", "/api/approvals/"+id+"/deny", "Bearer "+bobTok, `{"reason":"no"}`)
			case 2:
				other.Decide(t.Context(), id, store.Transition{To: store.Denied, Decision: "denied", By: "bob", Reason: "elsewhere"}, nil)
			}
		}
		for _, limit := range []int{1, 7, 50, 1000} {
			url := fmt.Sprintf("%s/api/approvals?status=pending&limit=%d", f.srv.URL, limit)
			var got, want []byte
			eventually(t, fmt.Sprintf("round %d limit %d: the view matches the database", round, limit), func() bool {
				want = fromDB(t, f.st, limit)
				got = get(t, url)
				return bytes.Equal(got, want)
			})
		}
	}
}

// TestPendingViewSeesOwnWritesAtOnce: a request stored by this process (an
// agent's call served by this warden serve) is listed by the very next
// list, without waiting for the change feed's wake-up, and one decided
// through the store here leaves it as soon.
func TestPendingViewSeesOwnWritesAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var want []string
	for i := range 30 {
		id := f.newRequest(t)
		want = append([]string{id}, want...)
		if i%3 == 2 {
			if _, err := f.b.Decide(t.Context(), want[1], "alice", true, ""); err != nil {
				t.Fatal(err)
			}
			want = append(want[:1], want[2:]...)
		}
		if got := pendingIDs(t, f.srv.URL, 1000); !cmp.Equal(got, want) {
			t.Fatalf("after write %d: listed %v, want %v", i, got, want)
		}
	}
}

// TestPendingViewDecidedElsewhere: a request decided on another replica
// leaves this one's list within the poll bound, and one created by
// another process between two lists appears within it; a decision made
// here leaves the list at once, on this server.
func TestPendingViewDecidedElsewhere(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, b := f.newRequest(t), f.newRequest(t)
	rep, _ := f.replica(t)
	eventually(t, "both requests listed", func() bool { return cmp.Equal(pendingIDs(t, f.srv.URL, 50), []string{b, a}) })
	// Decided on the replica: gone here.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", rep.URL+"/api/approvals/"+b+"/approve", nil)
	req.Header.Set("Authorization", "Bearer "+bobTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("approve on the replica: %v %v", err, resp)
	}
	resp.Body.Close()
	// On the replica itself, at once.
	if got := pendingIDs(t, rep.URL, 50); !cmp.Equal(got, []string{a}) {
		t.Fatalf("the replica that decided still lists it: %v", got)
	}
	eventually(t, "a request decided on another replica leaves the list", func() bool {
		return cmp.Equal(pendingIDs(t, f.srv.URL, 50), []string{a})
	})
	// A stale list costs a 409, never a second decision.
	if code, _ := f.do(t, "POST", "/api/approvals/"+b+"/deny", "Bearer "+aliceTok, `{"reason":"late"}`); code != 409 {
		t.Fatalf("deciding a request decided elsewhere: %d, want 409", code)
	}
	// Created by another process between two lists: appears on both.
	c := f.newRequest(t)
	eventually(t, "a new request reaches the replica's list", func() bool {
		return cmp.Equal(pendingIDs(t, rep.URL, 50), []string{c, a})
	})
	eventually(t, "a new request reaches this list", func() bool {
		return cmp.Equal(pendingIDs(t, f.srv.URL, 50), []string{c, a})
	})
}

// TestPendingViewRestart: a server started on a database changed while it
// was down lists what the database holds, not what an earlier process
// had in memory.
func TestPendingViewRestart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, b := f.newRequest(t), f.newRequest(t)
	rep, _ := f.replica(t)
	if got := pendingIDs(t, rep.URL, 50); !cmp.Equal(got, []string{b, a}) {
		t.Fatalf("before: %v", got)
	}
	// While a second replica is down (closed), the database changes.
	rep.Close()
	if _, err := f.b.Decide(t.Context(), a, "alice", true, ""); err != nil {
		t.Fatal(err)
	}
	c := f.newRequest(t)
	rep2, _ := f.replica(t)
	if got := pendingIDs(t, rep2.URL, 50); !cmp.Equal(got, []string{c, b}) {
		t.Fatalf("after a restart: %v, want [%s %s]", got, c, b)
	}
}

// TestPendingViewOlderRowCannotResurrect: a decision made here is applied
// at once; a row of the same request the feed read before that decision
// (older sequence) must not bring it back, and a failed feed read takes
// the view out of use until the next good one.
func TestPendingViewOlderRowCannotResurrect(t *testing.T) {
	t.Parallel()
	v := newPendingView()
	v.ready = true
	now := time.Now()
	mk := func(id string, seq int64, state store.State, created time.Time) *store.Approval {
		return &store.Approval{ID: id, Tool: "t", Args: json.RawMessage(`{}`), State: state, Seq: seq, CreatedAt: created}
	}
	v.apply(mk("x", 1, store.Pending, now))
	v.apply(mk("y", 2, store.Pending, now)) // same millisecond: seq orders
	v.apply(mk("z", 3, store.Pending, now.Add(-time.Second)))
	ids := func() []string {
		var out []string
		for _, r := range v.rows {
			out = append(out, r.a.ID)
		}
		return out
	}
	if got := ids(); !cmp.Equal(got, []string{"y", "x", "z"}) {
		t.Fatalf("order: %v", got)
	}
	v.applyDecided(mk("x", 10, store.Approved, now))
	v.apply(mk("x", 1, store.Pending, now)) // the feed's older read
	v.apply(mk("x", 9, store.Pending, now))
	if got := ids(); !cmp.Equal(got, []string{"y", "z"}) {
		t.Fatalf("an older row brought a decided request back: %v", got)
	}
	v.fed(9, true)
	if _, ok := v.gone["x"]; !ok {
		t.Fatal("the guard was dropped before the feed passed the decision")
	}
	v.fed(10, true)
	if len(v.gone) != 0 {
		t.Fatalf("guards left after the feed passed them: %v", v.gone)
	}
	// A row that changed but stays pending (claimed, new owner) moves.
	v.apply(mk("z", 11, store.Pending, now.Add(-time.Second)))
	if got := ids(); !cmp.Equal(got, []string{"y", "z"}) || v.byID["z"].a.Seq != 11 {
		t.Fatalf("after an update: %v", got)
	}
	body, ok := v.answer(1)
	if !ok || !bytes.Contains(body, []byte(`"y"`)) || bytes.Contains(body, []byte(`"z"`)) {
		t.Fatalf("answer(1) = %s, %v", body, ok)
	}
	v.fed(0, false)
	if _, ok := v.answer(1); ok {
		t.Fatal("the view answered after a failed read of the feed")
	}
	v.fed(11, true)
	// A row that does not encode is left to the database path.
	v.apply(mk("bad", 12, store.Pending, now.Add(time.Second)))
	v.byID["bad"].a.Args = json.RawMessage(`{`)
	v.byID["bad"].json = nil
	if _, ok := v.answer(5); ok {
		t.Fatal("the view answered with a row it could not encode")
	}
}

// BenchmarkListPending compares the two ways GET
// /api/approvals?status=pending&limit=50 is answered, with 1,000 requests
// pending: from the view (after a change, so the answer is assembled from
// the rows' encodings, as after every decision), and from the database
// (List and the JSON of 50 requests, what every list did before).
func BenchmarkListPending(b *testing.B) {
	st, err := store.OpenSQLite(filepath.Join(b.TempDir(), "warden.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	args := json.RawMessage(`{"command":"make test"}`)
	for i := range 1000 {
		a := &store.Approval{ID: approval.NewID(), Tool: "run_command", Args: args, ArgsHash: approval.BindingHash("run_command", args, "/w", "s"),
			Workspace: "/w", Session: "s", State: store.Pending, CreatedAt: now.Add(time.Duration(i) * time.Millisecond), ExpiresAt: now.Add(time.Hour), Owner: store.CurrentOwner()}
		if err := st.Create(b.Context(), a, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("view", func(b *testing.B) {
		v := newPendingView()
		if _, err := v.load(b.Context(), st); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			v.version++ // as a change does: the answer is assembled again
			rec := httptest.NewRecorder()
			body, _ := v.answer(50)
			rec.Write(body)
		}
	})
	b.Run("database", func(b *testing.B) {
		for b.Loop() {
			list, err := st.List(b.Context(), store.Filter{State: store.Pending, Limit: 50})
			if err != nil {
				b.Fatal(err)
			}
			writeJSON(httptest.NewRecorder(), 200, map[string]any{"approvals": list})
		}
	})
}

// TestPendingViewBounded: past maxViewRows pending requests the view lets
// go of its rows and answers nothing (lists go to the database), and later
// changes do not fill it again.
func TestPendingViewBounded(t *testing.T) {
	t.Parallel()
	v := newPendingView()
	v.fed(0, true)
	t0 := time.Now()
	add := func(i int) {
		v.apply(&store.Approval{ID: fmt.Sprintf("r%d", i), Seq: int64(i + 1), State: store.Pending, CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	for i := range maxViewRows {
		add(i)
	}
	if _, ok := v.answer(50); !ok {
		t.Fatalf("%d pending: the view does not answer", maxViewRows)
	}
	add(maxViewRows)
	if _, ok := v.answer(50); ok {
		t.Fatalf("%d pending: the view still answers", maxViewRows+1)
	}
	for i := maxViewRows + 1; i < maxViewRows+100; i++ {
		add(i)
	}
	if n := len(v.rows) + len(v.byID); n != 0 {
		t.Fatalf("after overflow the view holds %d rows", n)
	}
}
