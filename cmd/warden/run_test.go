package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/llm/llmtest"
)

// The canary key has no secret-looking shape and lives in a variable whose
// name does not look secret either, so no redaction could hide a leak: if
// it appears anywhere, the test sees it.
const runCanary = "CANARYVALUE7f3a9c21d5e8"

type runEnv struct {
	t    *testing.T
	dir  string // the test's root
	ws   string // the workspace
	srv  *llmtest.Server
	conf string
	log  string
}

func newRunEnv(t *testing.T, extraConfig string, turns ...llmtest.Turn) *runEnv {
	t.Helper()
	if _, err := exec.LookPath("warden"); err != nil {
		t.Fatalf("warden is not on PATH, where testscript.Main puts it: %v", err)
	}
	e := &runEnv{t: t, dir: t.TempDir(), srv: llmtest.New(turns...)}
	t.Cleanup(e.srv.Close)
	e.ws = filepath.Join(e.dir, "ws")
	e.conf = filepath.Join(e.dir, "run.toml")
	e.log = filepath.Join(e.dir, "run.jsonl")
	for _, d := range []string{e.ws, filepath.Join(e.dir, "home"), filepath.Join(e.dir, "config"), filepath.Join(e.dir, "state")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := fmt.Sprintf(`[llm]
base_url = %q
model = "m"
api_key_env = "WARDEN_LLM_CANARY"
retries = 2

[llm.prices.m]
input = 1.0
output = 10.0
%s`, e.srv.BaseURL(), extraConfig)
	if err := os.WriteFile(e.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *runEnv) command(args ...string) *exec.Cmd {
	base := []string{"run", "--workspace", e.ws, "--config", e.conf, "--log-file", e.log}
	cmd := exec.Command("warden", append(base, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(e.dir, "home"),
		"XDG_CONFIG_HOME=" + filepath.Join(e.dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(e.dir, "state"),
		"WARDEN_LLM_CANARY=" + runCanary,
	}
	return cmd
}

type runOut struct {
	stdout, stderr string
	code           int
}

func (e *runEnv) run(args ...string) runOut {
	e.t.Helper()
	cmd := e.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return runOut{out.String(), errb.String(), code}
}

// runJSON is the whole contract of `warden run --json`: decodeRun refuses
// any other field.
type runJSON struct {
	Answer     string  `json:"answer"`
	StopReason string  `json:"stop_reason"`
	Steps      int     `json:"steps"`
	Cost       float64 `json:"cost"`
	Tokens     struct {
		Input, Output, Total int64
	} `json:"tokens"`
	Detail string `json:"detail"`
}

// decodeRun reads stdout as exactly one JSON object with the fields of
// runJSON, the required ones present.
func decodeRun(t *testing.T, stdout string) runJSON {
	t.Helper()
	var r runJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not one object of the --json contract: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout has more than one JSON value:\n%s", stdout)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"answer", "stop_reason", "steps", "cost", "tokens"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("--json output lacks %q: %s", k, stdout)
		}
	}
	return r
}

func TestRunDoneJSON(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "",
		llmtest.Turn{Status: 429, Header: map[string]string{"Retry-After": "0"}},
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"a.txt"}`}}, PromptTokens: 1000, CompletionTokens: 100},
		llmtest.Turn{Content: "The file says hello.", PromptTokens: 1000, CompletionTokens: 100},
	)
	if err := os.WriteFile(filepath.Join(e.ws, "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := e.run("--json", "read a.txt")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	r := decodeRun(t, o.stdout)
	if r.Answer != "The file says hello." || r.StopReason != "done" || r.Steps != 2 || r.Tokens.Total != 2200 || r.Cost != 0.004 {
		t.Errorf("result %+v", r)
	}
	if n := len(e.srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (one 429 retried)", n)
	}
	if !strings.Contains(o.stderr, "warden: step 1/50") || !strings.Contains(o.stderr, "stop_reason=done") {
		t.Errorf("progress on stderr:\n%s", o.stderr)
	}
	// The plain form prints the answer alone.
	e2 := newRunEnv(t, "", llmtest.Turn{Content: "just this"})
	o = e2.run("say it")
	if o.code != 0 || o.stdout != "just this\n" {
		t.Errorf("exit %d stdout %q", o.code, o.stdout)
	}
	logText, _ := os.ReadFile(e2.log)
	if !bytes.Contains(logText, []byte(`"event":"stop"`)) || !bytes.Contains(logText, []byte(`"reason":"done"`)) {
		t.Errorf("the log file has no stop record:\n%s", logText)
	}
}

// The API key is used for the model and appears nowhere else: not on
// stdout or stderr, not in the log file or the audit database, not in a
// command's environment. The control variable proves that the command's
// environment does reach the model.
func TestRunAPIKeyCanary(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, `
[commands]
env_allowlist = ["WARDEN_VISIBLE_CONTROL"]
`,
		llmtest.Turn{ToolCalls: []llmtest.Call{
			{Name: "run_command", Arguments: `{"command":"env; cat /proc/self/environ | tr '\\0' '\\n'"}`},
			{Name: "write_file", Arguments: `{"path":"out.txt","content":"x"}`},
		}},
		llmtest.Turn{Content: "done"},
	)
	cmd := e.command("--mode", "yolo", "--json", "show the environment")
	cmd.Env = append(cmd.Env, "WARDEN_VISIBLE_CONTROL=control-value-visible", "WARDEN_LOG=debug")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer "+runCanary {
		t.Fatalf("the key was not sent to the model")
	}
	var fed string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			fed += m.Text()
		}
	}
	if !strings.Contains(fed, "control-value-visible") {
		t.Fatalf("the command's environment did not reach the model:\n%s", fed)
	}
	places := map[string]string{"stdout": out.String(), "stderr": errb.String(), "tool results": fed}
	b, _ := os.ReadFile(e.log)
	places["log file"] = string(b)
	if len(b) == 0 {
		t.Error("the log file is empty")
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "state", "warden", "*"))
	if len(files) == 0 {
		t.Error("no audit database")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		places[f] = string(b)
	}
	for where, text := range places {
		if strings.Contains(text, runCanary) {
			t.Errorf("the API key is in %s", where)
		}
	}
}

// A server that echoes the key in its error does not get it printed.
func TestRunKeyNotInErrors(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "", llmtest.Turn{Status: 401, ErrorMessage: "Incorrect API key provided: " + runCanary})
	o := e.run("--json", "anything")
	if o.code != 1 {
		t.Errorf("exit %d, want 1", o.code)
	}
	if r := decodeRun(t, o.stdout); r.StopReason != "error" {
		t.Errorf("stop_reason %q", r.StopReason)
	}
	b, _ := os.ReadFile(e.log)
	for where, text := range map[string]string{"stdout": o.stdout, "stderr": o.stderr, "log": string(b)} {
		if strings.Contains(text, runCanary) {
			t.Errorf("the key is in %s", where)
		}
	}
}

func TestRunSafetyNetsExit(t *testing.T) {
	t.Parallel()
	loop := llmtest.Turn{Func: func(r *llmtest.Request) llmtest.Turn {
		if len(r.Tools) == 0 {
			return llmtest.Turn{Content: "summary"}
		}
		return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "list_files", Arguments: `{}`}}, PromptTokens: 1000, CompletionTokens: 100}
	}}
	tests := []struct {
		name   string
		args   []string
		reason string
		steps  int
	}{
		{"max steps", []string{"--max-steps", "2"}, "max_steps", 2},
		{"budget", []string{"--budget", "0.005"}, "budget", 3}, // $0.002 a step
		{"plan agent's default", []string{"--agent", "plan"}, "max_steps", 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newRunEnv(t, "")
			e.srv.SetRepeat(loop)
			o := e.run(append(tc.args, "--json", "loop")...)
			r := decodeRun(t, o.stdout)
			if o.code != 1 || r.StopReason != tc.reason || r.Steps != tc.steps {
				t.Errorf("exit %d, %+v; want exit 1, %s after %d steps\n%s", o.code, r, tc.reason, tc.steps, o.stderr)
			}
		})
	}
	t.Run("step timeout", func(t *testing.T) {
		t.Parallel()
		e := newRunEnv(t, "", llmtest.Turn{Delay: 20 * time.Second})
		start := time.Now()
		o := e.run("--timeout", "0.5", "--json", "slow")
		if r := decodeRun(t, o.stdout); o.code != 1 || r.StopReason != "timeout" || time.Since(start) > 10*time.Second {
			t.Errorf("exit %d, %+v after %v", o.code, r, time.Since(start))
		}
	})
}

func TestRunPlanAndDryRunChangeNothing(t *testing.T) {
	t.Parallel()
	write := llmtest.Turn{ToolCalls: []llmtest.Call{
		{Name: "write_file", Arguments: `{"path":"x.txt","content":"x"}`},
		{Name: "run_command", Arguments: `{"command":"touch y.txt"}`},
	}}
	for _, args := range [][]string{{"--agent", "plan", "--mode", "yolo"}, {"--dry-run", "--mode", "yolo"}} {
		e := newRunEnv(t, "", write, llmtest.Turn{Content: "ok"})
		o := e.run(append(args, "change things")...)
		if o.code != 0 {
			t.Errorf("%v: exit %d\n%s", args, o.code, o.stderr)
		}
		if entries, _ := os.ReadDir(e.ws); len(entries) != 0 {
			t.Errorf("%v changed the workspace: %v", args, entries)
		}
	}
}

func TestRunYoloWarning(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "", llmtest.Turn{Content: "a"}, llmtest.Turn{Content: "b"})
	o := e.run("--mode", "yolo", "x")
	if n := strings.Count(o.stderr, "yolo mode runs every command"); n != 1 {
		t.Errorf("the yolo warning appeared %d times:\n%s", n, o.stderr)
	}
	cmd := e.command("--mode", "yolo", "x")
	cmd.Env = append(cmd.Env, "WARDEN_ALLOWED_ONLY=true")
	b, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(b), "yolo mode") {
		t.Errorf("with allowed_only: %v\n%s", err, b)
	}
}

func TestRunUsage(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "")
	for _, args := range [][]string{
		{}, {""}, {"--budget", "-1", "x"}, {"--max-steps", "-2", "x"}, {"--timeout", "-1", "x"}, {"a", "b"}, {"--bogus", "x"},
	} {
		if o := e.run(args...); o.code != 2 || o.stdout != "" {
			t.Errorf("%q: exit %d stdout %q, want 2 and nothing", args, o.code, o.stdout)
		}
	}
	o := e.run("--model", "unpriced", "--budget", "1", "x")
	if o.code != 1 || !strings.Contains(o.stderr, "--budget needs the price") || !strings.Contains(o.stderr, "hint:") {
		t.Errorf("budget without a price: exit %d\n%s", o.code, o.stderr)
	}
	if n := len(e.srv.Requests()); n != 0 {
		t.Errorf("%d model requests from refused command lines", n)
	}
}

// The first SIGINT lets the step finish (the write lands), then one model
// call without tools writes the summary; the exit is clean.
func TestRunSIGINTOnce(t *testing.T) {
	t.Parallel()
	got := make(chan struct{}, 1)
	e := newRunEnv(t, "",
		llmtest.Turn{Func: func(*llmtest.Request) llmtest.Turn {
			got <- struct{}{}
			return llmtest.Turn{Delay: 1500 * time.Millisecond, ToolCalls: []llmtest.Call{{Name: "write_file", Arguments: `{"path":"w.txt","content":"whole"}`}}}
		}},
		llmtest.Turn{Content: "Summary: wrote w.txt."},
	)
	cmd := e.command("--mode", "yolo", "--json", "write")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-got
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	r := decodeRun(t, out.String())
	if r.StopReason != "interrupted" || r.Answer != "Summary: wrote w.txt." || r.Steps != 1 {
		t.Errorf("%+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(e.ws, "w.txt")); err != nil || string(b) != "whole" {
		t.Errorf("the step in flight did not finish: %q %v", b, err)
	}
	if reqs := e.srv.Requests(); len(reqs) != 2 || len(reqs[1].Tools) != 0 {
		t.Errorf("want a summary request without tools")
	}
	b, _ := os.ReadFile(e.log)
	if !bytes.Contains(b, []byte(`"reason":"interrupted"`)) {
		t.Errorf("no stop record:\n%s", b)
	}
}

// A second SIGINT exits 130 at once.
func TestRunSIGINTTwice(t *testing.T) {
	t.Parallel()
	got := make(chan struct{}, 1)
	e := newRunEnv(t, "", llmtest.Turn{Func: func(*llmtest.Request) llmtest.Turn {
		got <- struct{}{}
		return llmtest.Turn{Delay: 30 * time.Second, Content: "late"}
	}})
	cmd := e.command("--json", "wait")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-got
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %v, want exit 130 at once\n%s", err, time.Since(start), errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout after a hard stop: %q", out.String())
	}
	b, _ := os.ReadFile(e.log)
	if !bytes.Contains(b, []byte(`"reason":"interrupted"`)) {
		t.Errorf("no stop record:\n%s", b)
	}
}

// SIGTERM is a first SIGINT.
func TestRunSIGTERM(t *testing.T) {
	t.Parallel()
	got := make(chan struct{}, 1)
	e := newRunEnv(t, "",
		llmtest.Turn{Func: func(*llmtest.Request) llmtest.Turn {
			got <- struct{}{}
			return llmtest.Turn{Delay: 500 * time.Millisecond, ToolCalls: []llmtest.Call{{Name: "list_files", Arguments: `{}`}}}
		}},
		llmtest.Turn{Content: "Summary."},
	)
	cmd := e.command("--json", "list")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-got
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if r := decodeRun(t, out.String()); r.StopReason != "interrupted" || r.Answer != "Summary." {
		t.Errorf("%+v", r)
	}
}

// The detector of TestRunAPIKeyCanary works: a user who allowlists the
// key's variable for commands does see it in a command's environment.
func TestRunAPIKeyCanaryControl(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, `
[commands]
env_allowlist = ["WARDEN_LLM_CANARY"]
`,
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"env"}`}}},
		llmtest.Turn{Content: "done"},
	)
	if o := e.run("--mode", "yolo", "show the environment"); o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	reqs := e.srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), runCanary) {
		t.Fatalf("an allowlisted variable did not reach the command: the canary test cannot fail")
	}
}

// Tool names and arguments come from the model: the progress lines show
// their control characters escaped, never raw.
func TestRunProgressEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	e := newRunEnv(t, "",
		llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file\x1b]0;owned\x07\x1b[2J", Arguments: "{\"path\":\"\x1b[31mred\"}"}}},
		llmtest.Turn{Content: "done"},
	)
	o := e.run("x")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if strings.ContainsAny(o.stderr, "\x1b\x07") {
		t.Errorf("raw control characters on stderr: %q", o.stderr)
	}
	if !strings.Contains(o.stderr, `read_file\u001b`) {
		t.Errorf("the escaped name is not shown: %q", o.stderr)
	}
}
