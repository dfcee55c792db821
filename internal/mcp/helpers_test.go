package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// memSink keeps audit records.
type memSink struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (m *memSink) Write(_ context.Context, r *audit.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, *r)
	return nil
}

func (m *memSink) all() []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]audit.Record(nil), m.recs...)
}

// fixture is a workspace, an engine over it and the approval store.
type fixture struct {
	dir     string
	cfg     *config.Config
	eng     *engine.Engine
	sink    *memSink
	store   *store.SQLite
	session string
	env     *tools.Env
	reg     *tools.Registry
}

type fixtureOpts struct {
	mode     string
	approver func(t testing.TB, st *store.SQLite) approval.Approver
	extra    []*tools.Tool
	builtins bool
}

func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), cfg: config.Default(), sink: &memSink{}, session: NewSessionID()}
	if o.mode != "" {
		f.cfg.Security.ConfirmMode = o.mode
	}
	root, err := workspace.Open(f.dir, &workspace.Options{Mask: f.cfg.Security.Mask, Protected: f.cfg.Security.Protected})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	st, err := store.OpenSQLite(filepath.Join(t.TempDir(), "warden.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.store = st
	env := &tools.Env{Root: root, FS: root, Runner: &command.Local{Root: root.Dir()}, Config: f.cfg, Session: f.session}
	reg := tools.NewRegistry()
	if o.builtins || len(o.extra) == 0 {
		reg = tools.Builtin(f.cfg)
	}
	for _, x := range o.extra {
		reg.Add(x)
	}
	var ap approval.Approver
	if o.approver != nil {
		ap = o.approver(t, st)
	}
	f.env, f.reg = env, reg
	f.eng, err = engine.New(engine.Options{Registry: reg, Env: env, Approver: ap, Audit: f.sink})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// brokers returns the approver `warden mcp` builds: plain (supervisor
// alice deciding through the store when remote) and eliciting.
func brokers(remote, elicit bool) func(t testing.TB, st *store.SQLite) approval.Approver {
	return func(t testing.TB, st *store.SQLite) approval.Approver {
		o := approval.Options{Store: st, Channels: []approval.Channel{ProgressChannel{}}, Poll: 10 * time.Millisecond}
		if remote {
			o.Remote, o.Supervisors = true, []string{"alice"}
		}
		plain, err := approval.New(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		a := &Approver{Plain: plain}
		if elicit {
			o.Prompt = Elicitor{}
			if a.Eliciting, err = approval.New(t.Context(), o); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
}

// connect serves eng in-process and returns a client session on it.
func connect(t *testing.T, eng Engine, so *ServerOptions, co *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	srv := NewServer(eng, so)
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v0"}, co).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name, args string) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s %s: protocol error %v", name, args, err)
	}
	return res
}

func text(res *sdk.CallToolResult) string {
	var b []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b = append(b, tc.Text)
		}
	}
	return strings.Join(b, "\n")
}

// waitPending returns the one PENDING request of st, waiting for it.
func waitPending(t *testing.T, st store.Store) *store.Approval {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		l, err := st.List(t.Context(), store.Filter{State: store.Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 {
			return l[0]
		}
	}
	t.Fatal("no request became pending")
	return nil
}

// waitState waits until request id is in state s.
func waitState(t *testing.T, st store.Store, id string, s store.State) *store.Approval {
	t.Helper()
	var a *store.Approval
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if a, err = st.Get(t.Context(), id); err == nil && a.State == s {
			return a
		}
	}
	t.Fatalf("request %s: state %v (err %v), want %s", id, a, err, s)
	return nil
}

func newPlanEngine(f *fixture) (*engine.Engine, error) {
	return engine.New(engine.Options{Registry: f.reg, Env: f.env, AgentName: "plan"})
}
