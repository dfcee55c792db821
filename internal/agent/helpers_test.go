package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/agent"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/llm"
	"github.com/wardenhq/warden/internal/llm/llmtest"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

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

func (m *memSink) events(kind string) []audit.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Record
	for _, r := range m.recs {
		if r.Event == kind {
			out = append(out, r)
		}
	}
	return out
}

func (m *memSink) all() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, _ := json.Marshal(m.recs)
	return string(b)
}

// fixture is a workspace, an engine over it, a scripted model and the
// options that tie them together.
type fixture struct {
	t    testing.TB
	dir  string
	cfg  *config.Config
	srv  *llmtest.Server
	sink *memSink
	eng  *engine.Engine
	opts agent.Options
}

type setup struct {
	agent  string
	dryRun bool
	mode   string
	files  map[string]string
	cfg    func(*config.Config)
}

func newFixture(t testing.TB, s setup, turns ...llmtest.Turn) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), cfg: config.Default(), sink: &memSink{}}
	for name, body := range s.files {
		p := filepath.Join(f.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if s.mode != "" {
		f.cfg.Security.ConfirmMode = s.mode
	}
	if s.cfg != nil {
		s.cfg(f.cfg)
	}
	root, err := workspace.Open(f.dir, &workspace.Options{Mask: f.cfg.Security.Mask, Protected: f.cfg.Security.Protected})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	env := &tools.Env{FS: root, Root: root, Runner: &command.Local{Root: root.Dir()}, Config: f.cfg, Session: "test-session", Agent: s.agent}
	var hooks engine.HookRunner
	if len(f.cfg.Hooks.PostEdit) > 0 {
		hooks = &engine.PostEditHooks{Hooks: f.cfg.Hooks.PostEdit, Runner: env.Runner, Env: command.Environ(f.cfg.Commands.EnvAllowlist, os.LookupEnv)}
	}
	f.eng, err = engine.New(engine.Options{Registry: tools.Builtin(f.cfg), Env: env, AgentName: s.agent, Audit: f.sink, DryRun: s.dryRun, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = llmtest.New(turns...)
	t.Cleanup(f.srv.Close)
	model, err := llm.New(llm.Options{BaseURL: f.srv.BaseURL(), Model: "m", APIKey: "sk-test-agent-key-0123456789abcdef", Retries: 0, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.opts = agent.Options{
		Model: model, Engine: f.eng, ModelName: "m", Agent: s.agent, Session: "test-session", Workspace: f.dir,
		MaxSteps: 50, Audit: f.sink,
	}
	return f
}

func (f *fixture) run(task string) agent.Result {
	f.t.Helper()
	res := agent.Run(context.Background(), task, f.opts)
	stops := f.sink.events("stop")
	if len(stops) != 1 || stops[0].Reason != string(res.StopReason) {
		f.t.Errorf("stop records %+v, want one with reason %s", stops, res.StopReason)
	}
	return res
}

// toolMessages returns the tool results the model saw in request i.
func (f *fixture) toolMessages(i int) []string {
	f.t.Helper()
	reqs := f.srv.Requests()
	if i >= len(reqs) {
		f.t.Fatalf("request %d of %d", i, len(reqs))
	}
	var out []string
	for _, m := range reqs[i].Messages {
		if m.Role == "tool" {
			out = append(out, m.Text())
		}
	}
	return out
}

func call(name, args string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: name, Arguments: args}}, PromptTokens: 100, CompletionTokens: 10}
}

func answer(s string) llmtest.Turn {
	return llmtest.Turn{Content: s, PromptTokens: 100, CompletionTokens: 10}
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
