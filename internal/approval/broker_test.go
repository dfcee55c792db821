package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// memStore opens an in-memory SQLite store: no file I/O, so it runs inside
// a synctest bubble, where time.Now and timers are the bubble's.
func memStore(t testing.TB) *store.SQLite {
	t.Helper()
	s, err := store.OpenSQLite(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fileStore(t testing.TB) *store.SQLite {
	t.Helper()
	s, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newBroker(t testing.TB, s store.Store, mod func(*Options)) *Broker {
	t.Helper()
	o := Options{Store: s, Supervisors: []string{"alice", "bob"}, Remote: true, Timeout: 5 * time.Minute}
	if mod != nil {
		mod(&o)
	}
	b, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var lsReq = &Request{Tool: "run_command", Args: json.RawMessage(`{"command":"rm -rf build"}`), Workspace: "/w", Session: "s1", Agent: "build", Rule: "tool_policy.tools.run_command"}

type askResult struct {
	out Outcome
	err error
	at  time.Time
}

func ask(b *Broker, ctx context.Context, req *Request) chan askResult {
	ch := make(chan askResult, 1)
	go func() {
		out, err := b.Ask(ctx, req)
		ch <- askResult{out, err, time.Now()}
	}()
	return ch
}

// pendingID waits (in the bubble) for the one pending request.
func pendingID(t *testing.T, s store.Store) string {
	t.Helper()
	for range 100 {
		l, err := s.List(context.Background(), store.Filter{State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			return l[0].ID
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pending request")
	return ""
}

func TestTimeout(t *testing.T) {
	for _, tc := range []struct {
		onTimeout string
		approved  bool
		state     store.State
	}{
		{config.PolicyDeny, false, store.TimedOut},
		{config.PolicyAllow, true, store.Approved},
	} {
		t.Run(tc.onTimeout, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := memStore(t)
				b := newBroker(t, s, func(o *Options) { o.OnTimeout = tc.onTimeout })
				start := time.Now()
				r := <-ask(b, t.Context(), lsReq)
				if r.err != nil {
					t.Fatal(r.err)
				}
				if got := r.at.Sub(start); got < 5*time.Minute || got > 5*time.Minute+time.Second {
					t.Errorf("decided after %s, want the 5m timeout", got)
				}
				if r.out.Approved != tc.approved || r.out.By != "timeout" || r.out.State != tc.state {
					t.Errorf("outcome %+v", r.out)
				}
				a, _ := s.Get(t.Context(), r.out.ID)
				if a.State != tc.state {
					t.Errorf("stored state %s", a.State)
				}
				// A decision after the timeout is refused.
				if _, err := b.Decide(t.Context(), r.out.ID, "alice", true, ""); !errors.Is(err, store.ErrConflict) {
					t.Errorf("late decision: %v, want ErrConflict", err)
				}
			})
		})
	}
}

func TestDecisionBeforeTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		start := time.Now()
		ch := ask(b, t.Context(), lsReq)
		id := pendingID(t, s)
		time.Sleep(10 * time.Second)
		if _, err := b.Decide(t.Context(), id, "mallory", true, ""); !errors.Is(err, ErrNotSupervisor) {
			t.Errorf("mallory decided: %v", err)
		}
		if _, err := b.Decide(t.Context(), id, "bob", false, ""); err == nil {
			t.Error("a denial without a reason was accepted")
		}
		if _, err := b.Decide(t.Context(), id, "bob", false, "not on \x1b[31mmain\x1b[0m"); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := r.at.Sub(start); got > 10*time.Second+DefaultPoll {
			t.Errorf("decision seen after %s", got)
		}
		want := Outcome{ID: id, By: "bob", Reason: "not on  [31mmain [0m", State: "DENIED"}
		if fmt.Sprint(r.out) != fmt.Sprint(want) {
			t.Errorf("outcome %+v, want %+v", r.out, want)
		}
		if _, err := b.Decide(t.Context(), id, "alice", true, ""); !errors.Is(err, store.ErrConflict) {
			t.Errorf("second decision: %v", err)
		}
	})
}

func TestCancelledByCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		ctx, cancel := context.WithCancel(t.Context())
		ch := ask(b, ctx, lsReq)
		id := pendingID(t, s)
		cancel()
		r := <-ch
		if !errors.Is(r.err, context.Canceled) || r.out.State != store.Cancelled || r.out.Approved {
			t.Fatalf("got %+v, %v", r.out, r.err)
		}
		if _, err := b.Decide(t.Context(), id, "alice", true, ""); !errors.Is(err, store.ErrConflict) {
			t.Errorf("decision after cancel: %v", err)
		}
	})
}

// What runs is what was approved: the outcome carries the stored canonical
// arguments, and a stored request altered after asking is never handed out.
func TestWhatRunsIsWhatWasApproved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		b := newBroker(t, s, nil)
		req := &Request{Tool: "shell", Args: json.RawMessage(` {"z": 1, "command": "make <test>", "a": [1.50]} `), Workspace: "/w", Session: "s"}
		ch := ask(b, t.Context(), req)
		id := pendingID(t, s)
		if _, err := b.Decide(t.Context(), id, "alice", true, "ok"); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if r.err != nil || !r.out.Approved {
			t.Fatalf("%+v %v", r.out, r.err)
		}
		if got, want := string(r.out.Args), `{"a":[1.50],"command":"make <test>","z":1}`; got != want {
			t.Errorf("args %s, want %s", got, want)
		}
		if r.out.ArgsHash != BindingHash("run_command", r.out.Args, "/w", "s") {
			t.Error("hash does not bind tool, args, workspace and session")
		}
		if err := b.Executed(t.Context(), id, true, "done"); err != nil {
			t.Fatal(err)
		}
		if err := b.Executed(t.Context(), id, true, "again"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("second Executed: %v", err)
		}

		// Someone rewrites the stored arguments while the request waits.
		ch = ask(b, t.Context(), req)
		id = pendingID(t, s)
		if _, err := s.DB().Exec(`UPDATE approvals SET arguments = '{"command":"rm -rf ~"}' WHERE request_id = ?`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Decide(t.Context(), id, "alice", true, ""); err != nil {
			t.Fatal(err)
		}
		r = <-ch
		if r.err == nil || r.out.Approved || len(r.out.Args) != 0 {
			t.Fatalf("altered request handed out: %+v %v", r.out, r.err)
		}
	})
}

func TestNoChannel(t *testing.T) {
	t.Parallel()
	s := fileStore(t)
	for name, mod := range map[string]func(*Options){
		"no remote":      func(o *Options) { o.Remote = false },
		"no supervisors": func(o *Options) { o.Supervisors = nil },
	} {
		b := newBroker(t, s, mod)
		out, err := b.Ask(t.Context(), lsReq)
		var nc *NoChannelError
		if !errors.Is(err, ErrNoChannel) || !errors.As(err, &nc) || out.Approved {
			t.Fatalf("%s: %+v %v", name, out, err)
		}
		for _, way := range []string{"warden approvals approve ID", "--mode yolo", "--dry-run", "auto_approve", `tool_policy.tools.run_command = "allow"`} {
			if !strings.Contains(err.Error(), way) {
				t.Errorf("%s: message lacks %q: %s", name, way, err)
			}
		}
	}
	if l, _ := s.List(t.Context(), store.Filter{}); len(l) != 0 {
		t.Errorf("%d requests stored without a channel", len(l))
	}
	rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "approval"})
	if len(rows) != 2 || rows[0].Record.Decision != "denied" {
		t.Errorf("refusals not audited: %+v", rows)
	}
}

func TestAutoApprove(t *testing.T) {
	t.Parallel()
	s := fileStore(t)
	aa, err := CompileAutoApprove([]config.AutoApprove{{Tool: "shell", CommandPattern: `^(ls|cat) `}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mirror := &sinkRecorder{}
	b := newBroker(t, s, func(o *Options) { o.Auto = aa; o.Remote = false; o.Audit = mirror })
	out, err := b.Ask(t.Context(), &Request{Tool: "run_command", Args: json.RawMessage(`{"command":"ls -la"}`)})
	if err != nil || !out.Approved || !out.Auto || out.By != "auto:auto_approve[0]" {
		t.Fatalf("%+v %v", out, err)
	}
	if err := b.Executed(t.Context(), out.ID, true, "x"); err != nil {
		t.Fatal(err)
	}
	// A chained command is not auto-approved, and with no channel it fails safe.
	if out, err := b.Ask(t.Context(), &Request{Tool: "run_command", Args: json.RawMessage(`{"command":"ls -la; rm -rf x"}`)}); !errors.Is(err, ErrNoChannel) || out.Approved {
		t.Fatalf("chained command: %+v %v", out, err)
	}
	rows, _ := s.Audit(t.Context(), store.AuditFilter{Event: "approval"})
	if len(rows) == 0 || rows[0].Record.Decision != "auto-approved" || rows[0].Record.RequestID != out.ID && rows[0].Record.RequestID == "" {
		t.Errorf("auto-approval not audited as such: %+v", rows)
	}
	if len(mirror.recs) == 0 || mirror.recs[0].Decision != "auto-approved" {
		t.Errorf("mirror got %+v", mirror.recs)
	}
}

type sinkRecorder struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (r *sinkRecorder) Write(_ context.Context, rec *audit.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, *rec)
	return nil
}

// 50 supervisors' clients decide one request at once: exactly one wins,
// the waiting call sees that one, and it executes once.
func TestFiftyDeciders(t *testing.T) {
	t.Parallel()
	s := fileStore(t)
	sups := make([]string, 50)
	for i := range sups {
		sups[i] = fmt.Sprintf("sup%02d", i)
	}
	b := newBroker(t, s, func(o *Options) { o.Supervisors = sups })
	ch := ask(b, t.Context(), lsReq)
	id := func() string {
		for {
			l, _ := s.List(t.Context(), store.Filter{State: store.Pending})
			if len(l) == 1 {
				return l[0].ID
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var wins atomic.Int64
	var winner atomic.Value
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, sup := range sups {
		wg.Go(func() {
			<-start
			_, err := b.Decide(t.Context(), id, sup, i%3 != 0, "reason "+sup)
			if err == nil {
				wins.Add(1)
				winner.Store(sup)
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("%s: %v", sup, err)
			}
		})
	}
	close(start)
	wg.Wait()
	r := <-ch
	if wins.Load() != 1 {
		t.Fatalf("%d decisions won", wins.Load())
	}
	if r.out.By != winner.Load() {
		t.Errorf("waiter saw %q, winner %q", r.out.By, winner.Load())
	}
	var executed atomic.Int64
	for range 50 {
		wg.Go(func() {
			if b.Executed(t.Context(), id, true, "ok") == nil {
				executed.Add(1)
			}
		})
	}
	wg.Wait()
	if want := map[bool]int64{true: 1, false: 0}[r.out.Approved]; executed.Load() != want {
		t.Errorf("executed %d times, approved=%v", executed.Load(), r.out.Approved)
	}
}

type fakePrompt struct {
	ans   Answer
	err   error
	block bool
	asked chan *Pending
}

func (f *fakePrompt) Prompt(ctx context.Context, p *Pending) (Answer, error) {
	if f.asked != nil {
		f.asked <- p
	}
	if f.block {
		<-ctx.Done()
		return Answer{}, ctx.Err()
	}
	return f.ans, f.err
}

func TestPrompt(t *testing.T) {
	cases := []struct {
		name     string
		p        *fakePrompt
		approved bool
		reason   string
		err      error
	}{
		{"yes", &fakePrompt{ans: Answer{Approve: true}}, true, "", nil},
		{"no with reason", &fakePrompt{ans: Answer{Reason: "use make clean"}}, false, "use make clean", nil},
		{"no without reason", &fakePrompt{ans: Answer{}}, false, "denied at the terminal", nil},
		{"abort", &fakePrompt{ans: Answer{Abort: true}}, false, "aborted at the terminal", ErrAborted},
		{"EOF denies", &fakePrompt{err: errors.New("EOF")}, false, "no answer at the terminal: EOF", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := memStore(t)
				b := newBroker(t, s, func(o *Options) { o.Prompt = c.p; o.Remote = false })
				r := <-ask(b, t.Context(), lsReq)
				if !errors.Is(r.err, c.err) || r.out.Approved != c.approved || r.out.Reason != c.reason {
					t.Fatalf("got %+v %v", r.out, r.err)
				}
				if r.out.By != TerminalSupervisor {
					t.Errorf("decided by %q", r.out.By)
				}
			})
		})
	}
	// The prompt races the store: a CLI decision from elsewhere wins and
	// ends the prompt.
	synctest.Test(t, func(t *testing.T) {
		s := memStore(t)
		p := &fakePrompt{block: true, asked: make(chan *Pending, 1)}
		b := newBroker(t, s, func(o *Options) { o.Prompt = p })
		ch := ask(b, t.Context(), lsReq)
		shown := <-p.asked
		if _, err := b.Decide(t.Context(), shown.ID, "alice", true, ""); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		if !r.out.Approved || r.out.By != "alice" {
			t.Fatalf("%+v %v", r.out, r.err)
		}
	})
}
