package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/agent"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/llm"
	"github.com/wardenhq/warden/internal/llm/llmtest"
	"github.com/wardenhq/warden/internal/tools"
)

func TestDone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{files: map[string]string{"notes.txt": "the answer is 42\n"}},
		call("read_file", `{"path":"notes.txt"}`),
		answer("It says 42."),
	)
	f.opts.Prices = llm.Prices{"m": {Input: 1, Output: 10}}
	res := f.run("what do the notes say?")
	want := agent.Result{
		Answer: "It says 42.", StopReason: agent.StopDone, Steps: 2,
		Cost:   (200*1 + 20*10) / 1e6,
		Tokens: agent.Tokens{Input: 200, Output: 20, Total: 220},
	}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	if got := f.toolMessages(1); len(got) != 1 || !strings.Contains(got[0], "the answer is 42") {
		t.Errorf("tool result fed back = %q", got)
	}
	first := f.srv.Requests()[0]
	if first.Messages[0].Role != "system" || first.Messages[1].Text() != "what do the notes say?" || len(first.Tools) == 0 {
		t.Errorf("first request: %s", first.Body)
	}
	if n := len(f.sink.events("llm_call")); n != 2 {
		t.Errorf("%d llm_call records, want 2", n)
	}
	if n := len(f.sink.events("tool_call")); n != 1 {
		t.Errorf("%d tool_call records, want 1", n)
	}
}

// Every refusal and tool error reaches the model as a tool result, and the
// loop goes on.
func TestRefusalsAndErrorsFedBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{files: map[string]string{".env": "TOKEN=x\n"}},
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "read_file", Arguments: `{"path":"../../etc/passwd"}`},
			{Name: "read_file", Arguments: `{"path":".env"}`},
			{Name: "launch_missiles", Arguments: `{}`},
			{Name: "read_file", Arguments: `{"path":`},
			{Name: "read_file", Arguments: `{"path":"missing.txt"}`},
			{Name: "write_file", Arguments: `{"path":"a.txt","content":"x"}`},
			{Name: "run_command", Arguments: `{"command":"sudo rm -rf /"}`},
		}},
		answer("I could not do it."),
	)
	res := f.run("try things")
	if res.StopReason != agent.StopDone || res.Answer != "I could not do it." {
		t.Fatalf("res = %+v", res)
	}
	got := f.toolMessages(1)
	for _, want := range []string{
		"escapes the workspace", "is masked", "Tool 'launch_missiles' not found", "Invalid arguments",
		"Error:", "approval", "sudo",
	} {
		if !contains(got, want) {
			t.Errorf("no tool result mentions %q:\n%s", want, strings.Join(got, "\n---\n"))
		}
	}
	if len(got) != 7 {
		t.Errorf("%d tool results for 7 calls", len(got))
	}
	if _, err := os.Stat(filepath.Join(f.dir, "a.txt")); err == nil {
		t.Error("a supervised write ran with nobody to approve it")
	}
}

func TestMaxStepsSummarises(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{files: map[string]string{"a.txt": "a"}})
	f.srv.SetRepeat(llmtest.Turn{Func: func(r *llmtest.Request) llmtest.Turn {
		if len(r.Tools) == 0 {
			return answer("Summary: I listed files three times.")
		}
		return call("list_files", `{}`)
	}})
	f.opts.MaxSteps = 3
	res := f.run("loop forever")
	if res.StopReason != agent.StopMaxSteps || res.Steps != 3 || res.Answer != "Summary: I listed files three times." {
		t.Fatalf("res = %+v", res)
	}
	reqs := f.srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 3 steps and a summary", len(reqs))
	}
	last := reqs[3]
	if len(last.Tools) != 0 || !strings.Contains(last.Messages[len(last.Messages)-1].Text(), "Do not call tools") {
		t.Errorf("the summary request offered tools or no instruction: %s", last.Body)
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{})
	f.srv.SetRepeat(call("list_files", `{}`)) // 100 in + 10 out per call
	f.opts.Prices = llm.Prices{"m": {Input: 1, Output: 10}}
	f.opts.Budget = 0.00055 // $0.0002 per call: the third passes it
	res := f.run("spend")
	if res.StopReason != agent.StopBudget || res.Steps != 3 || len(f.srv.Requests()) != 3 {
		t.Fatalf("res = %+v after %d requests", res, len(f.srv.Requests()))
	}
	if res.Cost <= f.opts.Budget || !strings.Contains(res.Detail, "budget") {
		t.Errorf("cost %v detail %q", res.Cost, res.Detail)
	}
	// The tool calls of the step that passed the budget are not run.
	if n := len(f.sink.events("tool_call")); n != 2 {
		t.Errorf("%d tool calls ran, want 2", n)
	}
}

// A server that reports no usage still counts against the budget.
func TestBudgetWithoutUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{})
	f.srv.SetRepeat(llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "list_files", Arguments: `{}`}}, NoUsage: true})
	f.opts.Prices = llm.Prices{"m": {Input: 100, Output: 100}}
	f.opts.Budget = 0.5
	res := f.run("spend")
	if res.StopReason != agent.StopBudget || res.Tokens.Input == 0 {
		t.Fatalf("res = %+v", res)
	}
}

func TestStepTimeoutModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{}, llmtest.Turn{Delay: 10 * time.Second, Content: "late"})
	f.opts.StepTimeout = 300 * time.Millisecond
	start := time.Now()
	res := f.run("slow model")
	if res.StopReason != agent.StopTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("res = %+v after %v", res, time.Since(start))
	}
}

func TestStepTimeoutTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{mode: config.ModeYolo},
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "run_command", Arguments: `{"command":"sleep 20"}`},
			{Name: "write_file", Arguments: `{"path":"after.txt","content":"x"}`},
		}},
		answer("never asked"),
	)
	f.opts.StepTimeout = 500 * time.Millisecond
	start := time.Now()
	res := f.run("slow tool")
	if res.StopReason != agent.StopTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("res = %+v after %v", res, time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(f.dir, "after.txt")); err == nil {
		t.Error("a call after the deadline ran")
	}
	if n := len(f.srv.Requests()); n != 1 {
		t.Errorf("%d model requests after a timeout, want 1", n)
	}
}

// Old tool results are compacted first; the run goes on when that is
// enough and stops with context_full when it is not.
func TestContextFull(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef\n", 400) // 6,800 bytes ≈ 2,267 tokens
	t.Run("compaction is enough", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, setup{files: map[string]string{"a.txt": big, "b.txt": big}},
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"a.txt"}`}}, NoUsage: true},
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"b.txt"}`}}, NoUsage: true},
			llmtest.Turn{Content: "done", NoUsage: true},
		)
		f.opts.ContextLimit = int64(f.toolSchemaTokens()) + 3500
		res := f.run("read both")
		if res.StopReason != agent.StopDone {
			t.Fatalf("res = %+v", res)
		}
		got := f.toolMessages(2)
		if len(got) != 2 || !strings.Contains(got[0], "compacted") || len(got[0]) > 500 || !strings.Contains(got[1], big[:1000]) {
			t.Errorf("third request's tool results: %d of them, first %d bytes", len(got), len(got[0]))
		}
	})
	t.Run("compaction is not enough", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, setup{files: map[string]string{"a.txt": big}},
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"a.txt"}`}}, NoUsage: true},
			answer("never asked"),
		)
		f.opts.ContextLimit = int64(f.toolSchemaTokens()) + 1500
		res := f.run("read it")
		if res.StopReason != agent.StopContextFull || len(f.srv.Requests()) != 1 {
			t.Fatalf("res = %+v after %d requests", res, len(f.srv.Requests()))
		}
	})
	t.Run("the server's count", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, setup{},
			llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "list_files", Arguments: `{}`}}, PromptTokens: 90_000, CompletionTokens: 10},
			answer("never asked"),
		)
		res := f.run("big prompt")
		if res.StopReason != agent.StopContextFull || len(f.srv.Requests()) != 1 {
			t.Fatalf("res = %+v after %d requests", res, len(f.srv.Requests()))
		}
	})
}

// toolSchemaTokens estimates what the tool schemas alone cost, the same
// way the loop does, so limits in tests are about the messages.
func (f *fixture) toolSchemaTokens() int {
	n := 0
	for _, t := range f.eng.Tools() {
		b, _ := t.Schema.MarshalJSON()
		n += (len(t.Name)+2)/3 + (len(t.Description)+2)/3 + (len(b)+2)/3
	}
	return n + 400 // the system prompt and the task
}

// Stop (the first SIGINT) lets the step in flight finish, then asks for a
// summary without tools.
func TestInterruptFinishesStepThenSummarises(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	f := newFixture(t, setup{mode: config.ModeYolo},
		llmtest.Turn{Func: func(*llmtest.Request) llmtest.Turn {
			close(stop) // the user presses Ctrl-C while the model thinks
			return llmtest.Turn{ToolCalls: []llmtest.Call{
				{Name: "write_file", Arguments: `{"path":"one.txt","content":"1"}`},
				{Name: "write_file", Arguments: `{"path":"two.txt","content":"2"}`},
			}}
		}},
		answer("Summary: wrote one.txt and two.txt."),
	)
	f.opts.Stop = stop
	res := f.run("write files")
	if res.StopReason != agent.StopInterrupted || res.Answer != "Summary: wrote one.txt and two.txt." || res.Steps != 1 {
		t.Fatalf("res = %+v", res)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(f.dir, name)); err != nil {
			t.Errorf("the step was not finished: %v", err)
		}
	}
	if reqs := f.srv.Requests(); len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Errorf("want one summary request without tools after the step")
	}
}

func TestPlanAgentCannotWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{agent: "plan", mode: config.ModeYolo},
		call("write_file", `{"path":"x.txt","content":"pwned"}`),
		call("run_command", `{"command":"touch y.txt"}`),
		call("file_write", `{"path":"z.txt","content":"alias"}`),
		answer("plan: ..."),
	)
	res := f.run("plan it")
	if res.StopReason != agent.StopDone {
		t.Fatalf("res = %+v", res)
	}
	var offered []string
	for _, tool := range f.srv.Requests()[0].Tools {
		offered = append(offered, tool.Function.Name)
	}
	for _, w := range []string{"write_file", "edit_file", "apply_patch", "delete_file", "run_command", "http_request"} {
		if slices.Contains(offered, w) {
			t.Errorf("the plan agent was offered %s", w)
		}
	}
	for i := 1; i <= 3; i++ {
		if got := f.toolMessages(i); !contains(got[len(got)-1:], "not found") {
			t.Errorf("request %d: last tool result %q", i, got)
		}
	}
	entries, _ := os.ReadDir(f.dir)
	if len(entries) != 0 {
		t.Errorf("the plan agent changed the workspace: %v", entries)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{dryRun: true, mode: config.ModeYolo, files: map[string]string{"keep.txt": "original"},
		cfg: func(c *config.Config) { c.Workspace.AllowDelete = true }},
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "write_file", Arguments: `{"path":"new.txt","content":"x"}`},
			{Name: "edit_file", Arguments: `{"path":"keep.txt","old_str":"original","new_str":"changed"}`},
			{Name: "delete_file", Arguments: `{"path":"keep.txt"}`},
			{Name: "run_command", Arguments: `{"command":"touch made.txt"}`},
		}},
		answer("done"),
	)
	before := snapshot(t, f.dir)
	res := f.run("change things")
	if res.StopReason != agent.StopDone {
		t.Fatalf("res = %+v", res)
	}
	if d := cmp.Diff(before, snapshot(t, f.dir)); d != "" {
		t.Errorf("dry run changed the workspace (-before +after):\n%s", d)
	}
	got := f.toolMessages(1)
	for i, m := range got {
		if !strings.Contains(m, "[DRY-RUN]") {
			t.Errorf("result %d: %q", i, m)
		}
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The model endpoint's API key lives in warden's environment; a command
// the model runs must not see it. The control variable proves the
// command's environment does reach the model.
func TestAPIKeyNotInCommandEnvironment(t *testing.T) {
	const key = "sk-test-CANARY-env-0123456789abcdef"
	t.Setenv("WARDEN_TEST_LLM_API_KEY", key)
	t.Setenv("WARDEN_TEST_VISIBLE", "visible-control-value")
	f := newFixture(t, setup{mode: config.ModeYolo, cfg: func(c *config.Config) {
		c.Commands.EnvAllowlist = []string{"WARDEN_TEST_VISIBLE"}
	}},
		call("run_command", `{"command":"env; cat /proc/self/environ | tr '\\0' '\\n'"}`),
		answer("ok"),
	)
	model, err := llm.FromConfig(config.LLM{BaseURL: f.srv.BaseURL(), Model: "m", APIKeyEnv: "WARDEN_TEST_LLM_API_KEY", Timeout: 10}, "", os.LookupEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Model = model
	f.run("show the environment")
	got := strings.Join(f.toolMessages(1), "\n")
	if !strings.Contains(got, "visible-control-value") {
		t.Fatalf("the command's environment did not reach the model:\n%s", got)
	}
	if strings.Contains(got, key) {
		t.Errorf("the API key reached a command's environment")
	}
	if h := f.srv.Requests()[0].Header.Get("Authorization"); h != "Bearer "+key {
		t.Errorf("the key was not used: Authorization %q", h)
	}
	if strings.Contains(f.sink.all(), key) {
		t.Errorf("the key is in an audit record")
	}
}

func TestPostEditHooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{mode: config.ModeYolo, cfg: func(c *config.Config) {
		c.Hooks.PostEdit = []config.Hook{
			{Name: "check", Command: `echo "checked $WARDEN_EDITED_FILE" {file}`, FilePatterns: []string{"*.go"}, Timeout: 5},
			{Name: "lint", Command: "echo lint-says-no; exit 3", Timeout: 5},
			{Name: "hang", Command: "sleep 30", Timeout: 1},
			{Name: "md-only", Command: "echo md", FilePatterns: []string{"*.md"}, Timeout: 5},
		}
	}},
		call("write_file", `{"path":"main.go","content":"package main\n"}`),
		call("read_file", `{"path":"main.go"}`),
		answer("written"),
	)
	start := time.Now()
	res := f.run("write main.go")
	if res.StopReason != agent.StopDone || res.Answer != "written" {
		t.Fatalf("res = %+v", res)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("a hanging hook held the loop for %v", el)
	}
	got := f.toolMessages(1)[0]
	for _, want := range []string{"[hook check on main.go: ok]", "checked main.go main.go", "[hook lint on main.go: failed with status 3]", "lint-says-no", "[hook hang on main.go: timed out after 1s]"} {
		if !strings.Contains(got, want) {
			t.Errorf("write result lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hook md-only") {
		t.Errorf("a hook ran on a file its patterns do not match:\n%s", got)
	}
	// Reads run no hooks.
	if r := f.toolMessages(2)[1]; strings.Contains(r, "[hook") {
		t.Errorf("a read ran hooks: %q", r)
	}
}

func TestModelErrorStops(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{}, llmtest.Turn{Status: 401, ErrorMessage: "Incorrect API key provided: sk-test-agent-key-0123456789abcdef"})
	res := f.run("anything")
	if res.StopReason != agent.StopError || !strings.Contains(res.Detail, "HTTP 401") {
		t.Fatalf("res = %+v", res)
	}
	if strings.Contains(res.Detail, "sk-test-agent-key") || strings.Contains(f.sink.all(), "sk-test-agent-key") {
		t.Errorf("the key leaked into the stop: %q", res.Detail)
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{}, llmtest.Turn{Delay: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res := agent.Run(ctx, "x", f.opts)
	if res.StopReason != agent.StopError || !strings.Contains(res.Detail, "cancelled") {
		t.Fatalf("res = %+v", res)
	}
}

func TestLongToolResultCut(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("é", 40_000) // 80,000 bytes
	f := newFixture(t, setup{files: map[string]string{"big.txt": body}},
		call("read_file", `{"path":"big.txt"}`),
		answer("ok"),
	)
	f.opts.MaxToolResult = 1001
	f.run("read")
	got := f.toolMessages(1)[0]
	if !strings.Contains(got, "[warden cut this result: 1000 of") || !strings.HasPrefix(got, "éé") {
		t.Errorf("result = %.80q…", got)
	}
}

// stopAt is an engine whose calls to one tool come back as a person
// stopping the run at the approval prompt.
type stopAt struct {
	agent.Engine
	tool string
}

func (s stopAt) Call(ctx context.Context, name string, args json.RawMessage) tools.Result {
	if name == s.tool {
		return tools.Result{Error: "The user stopped the run at the approval prompt.", Stop: true}
	}
	return s.Engine.Call(ctx, name, args)
}

func TestStopAtApprovalPrompt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, setup{mode: config.ModeYolo},
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "run_command", Arguments: `{"command":"echo hi"}`},
			{Name: "write_file", Arguments: `{"path":"after.txt","content":"x"}`},
		}},
		answer("Summary: stopped."),
	)
	f.opts.Engine = stopAt{Engine: f.eng, tool: "run_command"}
	res := f.run("do it")
	if res.StopReason != agent.StopInterrupted || res.Answer != "Summary: stopped." {
		t.Fatalf("res = %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "after.txt")); err == nil {
		t.Error("a call after the user stopped the run ran")
	}
	if got := f.toolMessages(1); len(got) != 2 || !strings.Contains(got[1], "Not run") {
		t.Errorf("tool results %q", got)
	}
}
