package approval

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/rulefile"
	"github.com/wardenhq/warden/internal/store"
)

var goTestReq = &Request{Tool: "run_command", Args: json.RawMessage(`{"command":"go test ./..."}`), Workspace: "/w/proj", Session: "s1", Agent: "build", Rule: "confirm_mode=confirm-sensitive"}

func alwaysBroker(t *testing.T, mod func(*Options)) (*Broker, store.Store, string) {
	t.Helper()
	// In memory: a broker's goroutines may still touch the store while a
	// test's temporary directories are removed.
	s := memStore(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	b := newBroker(t, s, func(o *Options) {
		o.Rules = rulefile.User{Path: path}
		if mod != nil {
			mod(o)
		}
	})
	return b, s, path
}

func auditEvents(t *testing.T, s store.Store, event string) []string {
	t.Helper()
	rows, err := s.Audit(t.Context(), store.AuditFilter{Event: event})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Record.RequestID+" "+r.Record.Rule+" "+r.Record.Reason)
	}
	return out
}

// "always" approves the request and writes the narrow rule, scoped to the
// request's workspace, into the user config, with the request id; the
// rule's creation is audited.
func TestApproveAlways(t *testing.T) {
	t.Parallel()
	b, s, path := alwaysBroker(t, nil)
	ch := ask(b, t.Context(), goTestReq)
	id := pendingID(t, s)
	a, written, err := b.ApproveAlways(t.Context(), id, "alice", "", nil)
	if err != nil || a.State != store.Approved || len(written) != 1 {
		t.Fatalf("%+v %+v %v", a, written, err)
	}
	if r := <-ch; !r.out.Approved || r.out.By != "alice" {
		t.Fatalf("the waiting call got %+v %v", r.out, r.err)
	}
	got, err := config.FileRules(path)
	if err != nil || len(got) != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	r := got[0]
	if !slices.Equal(r.Command, []string{"go", "test", "./..."}) || !r.Exact || r.Workspace != "/w/proj" || r.RequestID != id ||
		r.Decision != "allow" || r.ID != written[0].ID || r.Created == "" {
		t.Fatalf("written rule %+v", r)
	}
	ev := auditEvents(t, s, "rule_created")
	if len(ev) != 1 || !strings.HasPrefix(ev[0], id+" "+r.ID+" allow command go test ./... (exactly), in /w/proj (written to "+path) {
		t.Fatalf("audit %q", ev)
	}
	// A late "always" is refused and writes nothing.
	if _, _, err := b.ApproveAlways(t.Context(), id, "bob", "", nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("late always: %v", err)
	}
	if got, _ := config.FileRules(path); len(got) != 1 {
		t.Fatalf("a late always wrote: %+v", got)
	}
}

// Edited rules may be broader than the proposal, but must be allow rules
// for the request's workspace that cover the call.
func TestApproveAlwaysEdited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rule config.Rule
		err  string
	}{
		{"broader prefix", config.Rule{Command: []string{"go", "test"}, Decision: "allow", Workspace: "/w/proj"}, ""},
		{"does not cover", config.Rule{Command: []string{"go", "vet"}, Decision: "allow", Workspace: "/w/proj"}, "do not allow the call"},
		{"other workspace", config.Rule{Command: []string{"go", "test"}, Decision: "allow", Workspace: "/"}, "request's workspace"},
		{"no workspace", config.Rule{Command: []string{"go", "test"}, Decision: "allow"}, "request's workspace"},
		{"deny", config.Rule{Command: []string{"go", "test"}, Decision: "deny", Workspace: "/w/proj"}, "writes allow rules"},
		{"bad words", config.Rule{Command: []string{"go", "t*st"}, Decision: "allow", Workspace: "/w/proj"}, "may only end a word"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, s, path := alwaysBroker(t, nil)
			ch := ask(b, t.Context(), goTestReq)
			id := pendingID(t, s)
			_, _, err := b.ApproveAlways(t.Context(), id, "alice", "", []config.Rule{tc.rule})
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				<-ch
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
			if a, _ := s.Get(t.Context(), id); a.State != store.Pending {
				t.Errorf("a refused always decided the request: %s", a.State)
			}
			if _, err := os.Stat(path); err == nil {
				t.Error("a refused always wrote the config")
			}
			b.Decide(t.Context(), id, "alice", false, "done")
			<-ch
		})
	}
}

// A line that is not plain gets no lasting rule: the request stays pending
// for another answer.
func TestApproveAlwaysNotPlain(t *testing.T) {
	t.Parallel()
	b, s, _ := alwaysBroker(t, nil)
	req := *goTestReq
	req.Args = json.RawMessage(`{"command":"go test $(cat pkgs)"}`)
	ch := ask(b, t.Context(), &req)
	id := pendingID(t, s)
	if _, _, err := b.ApproveAlways(t.Context(), id, "alice", "", nil); err == nil || !strings.Contains(err.Error(), "approve it once or for the session") {
		t.Fatalf("got %v", err)
	}
	b.Decide(t.Context(), id, "alice", true, "")
	<-ch
}

// [a]lways at the terminal writes the rule; [s]ession grants the session.
func TestPromptAlwaysAndSession(t *testing.T) {
	t.Parallel()
	b, s, path := alwaysBroker(t, func(o *Options) { o.Prompt = &fakePrompt{ans: Answer{Approve: true, Always: true}}; o.Remote = false })
	r := <-ask(b, t.Context(), goTestReq)
	if !r.out.Approved || r.out.By != TerminalSupervisor {
		t.Fatalf("%+v %v", r.out, r.err)
	}
	got, err := config.FileRules(path)
	if err != nil || len(got) != 1 || got[0].RequestID != r.out.ID {
		t.Fatalf("%+v %v", got, err)
	}
	if ev := auditEvents(t, s, "rule_created"); len(ev) != 1 {
		t.Fatalf("audit %q", ev)
	}

	b2, s2, _ := alwaysBroker(t, func(o *Options) {
		o.Prompt = &fakePrompt{ans: Answer{Approve: true, Grant: maxGrantAsked}}
		o.Remote = false
	})
	if r := <-ask(b2, t.Context(), goTestReq); !r.out.Approved {
		t.Fatalf("%+v %v", r.out, r.err)
	}
	gs, err := s2.ListGrants(t.Context(), store.GrantFilter{})
	if err != nil || len(gs) != 1 || gs[0].ExpiresAt.Sub(gs[0].CreatedAt) != DefaultGrantMax {
		t.Fatalf("grants %+v %v", gs, err)
	}
	// The same call in the same session is now granted without asking.
	if r := <-ask(b2, t.Context(), goTestReq); !r.out.Approved || r.out.Grant != gs[0].ID {
		t.Fatalf("second call %+v %v", r.out, r.err)
	}
}

// A workspace+agent grant covers the same call in other sessions of that
// agent in that workspace — another process's broker on the same store —
// and nothing else: not another agent, workspace or call, not a file change.
func TestScopedGrantAcrossSessions(t *testing.T) {
	t.Parallel()
	s := fileStore(t)
	b1 := newBroker(t, s, nil)
	b2 := newBroker(t, s, nil) // another process
	req := &Request{Tool: "run_command", Args: json.RawMessage(`{"command":"make test"}`), Workspace: "/w", Session: "cli-1", Agent: "build"}
	ch := ask(b1, t.Context(), req)
	id := pendingID(t, s)
	_, g, err := b1.ApproveWithScopedGrant(t.Context(), id, "alice", "", 15*time.Minute)
	if err != nil || g.Scope() != store.ScopeWorkspaceAgent || g.Session != "" || g.Agent != "build" {
		t.Fatalf("%+v %v", g, err)
	}
	if r := <-ch; !r.out.Approved {
		t.Fatalf("%+v %v", r.out, r.err)
	}
	other := *req
	other.Session = "cli-2"
	if f, err := b2.Foresee(t.Context(), &other); err != nil || f.Grant == nil || f.Grant.ID != g.ID {
		t.Fatalf("foresee in another session: %+v %v", f, err)
	}
	if r := <-ask(b2, t.Context(), &other); !r.out.Approved || r.out.Grant != g.ID {
		t.Fatalf("another session: %+v %v", r.out, r.err)
	}
	for name, mod := range map[string]func(*Request){
		"other agent":     func(r *Request) { r.Agent = "plan" },
		"other workspace": func(r *Request) { r.Workspace = "/x" },
		"other call":      func(r *Request) { r.Args = json.RawMessage(`{"command":"make install"}`) },
	} {
		r := other
		mod(&r)
		if f, err := b2.Foresee(t.Context(), &r); err != nil || f.Grant != nil {
			t.Errorf("%s: foreseen grant %+v %v", name, f.Grant, err)
		}
	}
	// A file change is granted per session only.
	w := &Request{Tool: "write_file", Args: json.RawMessage(`{"path":"a","content":"x"}`), Workspace: "/w", Session: "cli-3", Agent: "build"}
	ch = ask(b1, t.Context(), w)
	var wid string
	for range 100 {
		l, _ := s.List(t.Context(), store.Filter{State: store.Pending})
		if len(l) == 1 {
			wid = l[0].ID
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := b1.ApproveWithScopedGrant(t.Context(), wid, "alice", "", time.Minute); !errors.Is(err, store.ErrGrantScope) {
		t.Fatalf("file change: %v", err)
	}
	b1.Decide(t.Context(), wid, "alice", false, "no")
	<-ch
	gs, _ := s.ListGrants(t.Context(), store.GrantFilter{})
	if len(gs) != 1 || gs[0].Uses != 1 {
		t.Fatalf("grants %+v", gs)
	}
}
