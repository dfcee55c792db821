package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// recorder is an approval.Approver that decides by a fixed answer and
// remembers what it was asked.
type recorder struct {
	mu       sync.Mutex
	answer   approval.Outcome
	err      error
	asked    []*approval.Request
	executed []string
}

func (r *recorder) Ask(ctx context.Context, req *approval.Request) (approval.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, req)
	return r.answer, r.err
}

func (r *recorder) Executed(ctx context.Context, id string, ok bool, result string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.executed = append(r.executed, id)
	return nil
}

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

type fixture struct {
	dir  string
	eng  *Engine
	appr *recorder
	sink *memSink
	ran  *[]string // arguments the probe tool actually ran with
}

// probe is a sensitive tool that records the arguments it runs with.
func probe(ran *[]string) *tools.Tool {
	type args struct {
		Path string `json:"path"`
	}
	return &tools.Tool{
		Name: "probe", Group: tools.GroupFSWrite, Sensitive: true,
		Schema: mustSchema[args](),
		Run: func(ctx context.Context, env *tools.Env, raw json.RawMessage) (string, error) {
			*ran = append(*ran, string(raw))
			return "ran", nil
		},
	}
}

func panicky() *tools.Tool {
	type args struct{}
	return &tools.Tool{
		Name: "panicky", Group: tools.GroupFSRead, Schema: mustSchema[args](),
		Run: func(context.Context, *tools.Env, json.RawMessage) (string, error) { panic("boom") },
	}
}

func newFixture(t *testing.T, edit func(*config.Config), opts func(*Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	root, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	cfg := config.Default()
	if edit != nil {
		edit(cfg)
	}
	f := &fixture{dir: dir, appr: &recorder{}, sink: &memSink{}, ran: new([]string)}
	reg := tools.Builtin(cfg)
	reg.Add(probe(f.ran))
	reg.Add(panicky())
	o := Options{
		Registry: reg,
		Env:      &tools.Env{FS: root, Root: root, Config: cfg, Session: "s1", Agent: "build"},
		Approver: f.appr,
		Audit:    f.sink,
	}
	if opts != nil {
		opts(&o)
	}
	f.eng, err = New(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPipelineRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, args string
		opts             func(*Options)
		wantErr          string
		wantRule         string
	}{
		{"unknown tool", "rm_rf", `{}`, nil, "Tool 'rm_rf' not found", "not-found"},
		{"tool outside agent set", "write_file", `{"path":"a","content":"x"}`, func(o *Options) { o.AgentName = "plan" }, "Tool 'write_file' not found", "not-found"},
		{"extra field", "read_file", `{"path":"a","sudo":true}`, nil, "additional properties", "invalid-arguments"},
		{"wrong type", "read_file", `{"path":7}`, nil, "Invalid arguments", "invalid-arguments"},
		{"missing field", "read_file", `{}`, nil, "Invalid arguments", "invalid-arguments"},
		{"not an object", "read_file", `["a"]`, nil, "must be a JSON object", "invalid-arguments"},
		{"trailing data", "read_file", `{"path":"a"} {"path":"b"}`, nil, "data after the value", "invalid-arguments"},
		{"escape", "read_file", `{"path":"../../etc/passwd"}`, nil, "Path '../../etc/passwd' escapes the workspace", "workspace-escape"},
		{"absolute", "read_file", `{"path":"/etc/passwd"}`, nil, "escapes the workspace", "workspace-escape"},
		{"masked", "read_file", `{"path":".env"}`, nil, "is masked", "masked-path"},
		{"masked write of a file that does not exist", "write_file", `{"path":"sub/.env.local","content":"x"}`, nil, "is masked", "masked-path"},
		{"protected", "write_file", `{"path":".git/hooks/pre-commit","content":"x"}`, nil, "is protected", "protected-path"},
		{"delete disabled", "delete_file", `{"path":"a"}`, nil, "deleting files is disabled", "delete-disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = config.ModeYolo }, tt.opts)
			res := f.eng.Call(context.Background(), tt.tool, json.RawMessage(tt.args))
			if res.Success || !strings.Contains(res.Error, tt.wantErr) {
				t.Fatalf("result %+v, want failure containing %q", res, tt.wantErr)
			}
			if len(f.appr.asked) != 0 {
				t.Errorf("a refused call was put to a person: %+v", f.appr.asked[0])
			}
			if got := f.sink.recs[0].Rule; got != tt.wantRule {
				t.Errorf("audit rule %q, want %q", got, tt.wantRule)
			}
			if f.sink.recs[0].Decision != "deny" {
				t.Errorf("audit decision %q, want deny", f.sink.recs[0].Decision)
			}
		})
	}
}

func TestPanicBecomesResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	res := f.eng.Call(context.Background(), "panicky", nil)
	if res.Success || !strings.Contains(res.Error, "boom") {
		t.Fatalf("got %+v", res)
	}
	if len(f.sink.recs) != 1 || f.sink.recs[0].Success {
		t.Fatalf("panicking call not audited as a failure: %+v", f.sink.recs)
	}
}

func TestApprovedRunsExactlyWhatWasAsked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	f.appr.answer = approval.Outcome{ID: "r1", Approved: true, By: "alice", State: store.Approved}
	// Duplicate keys: a parser that took the first one for the approval and
	// the last one for the run would run what nobody saw.
	res := f.eng.Call(context.Background(), "probe", json.RawMessage(`{"path":"shown","path":"hidden"}`))
	if !res.Success {
		t.Fatalf("got %+v", res)
	}
	if len(f.appr.asked) != 1 {
		t.Fatalf("asked %d times", len(f.appr.asked))
	}
	if got, ran := string(f.appr.asked[0].Args), (*f.ran)[0]; got != ran {
		t.Fatalf("approved %s but ran %s", got, ran)
	}
	if f.appr.executed[0] != "r1" {
		t.Errorf("execution not recorded on the request: %v", f.appr.executed)
	}
	if r := f.sink.recs[0]; r.Decision != "approved" || r.DecidedBy != "alice" || r.RequestID != "r1" {
		t.Errorf("audit record %+v", r)
	}
}

// The audit record of a call says how it was let through: a grant is not
// a person's approval of this call, nor an auto-approve rule.
func TestApprovalKindInAudit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		out  approval.Outcome
		want audit.Decision
	}{
		{"person", approval.Outcome{ID: "p", Approved: true, By: "alice", State: store.Approved}, audit.DecisionApproved},
		{"rule", approval.Outcome{ID: "a", Approved: true, Auto: true, By: "auto:1", State: store.Approved}, audit.DecisionAutoApproved},
		{"grant", approval.Outcome{ID: "g", Approved: true, Grant: "g1", By: "alice", State: store.Approved}, audit.DecisionGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil, nil)
			f.appr.answer = tc.out
			if res := f.eng.Call(context.Background(), "probe", json.RawMessage(`{"path":"x"}`)); !res.Success {
				t.Fatalf("got %+v", res)
			}
			if r := f.sink.recs[0]; r.Decision != tc.want || r.RequestID != tc.out.ID {
				t.Errorf("decision %q for request %q, want %q", r.Decision, r.RequestID, tc.want)
			}
		})
	}
}

func TestDeniedWithReason(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	f.appr.answer = approval.Outcome{ID: "r2", State: store.Denied, By: "bob", Reason: "not on a Friday"}
	res := f.eng.Call(context.Background(), "probe", json.RawMessage(`{"path":"x"}`))
	if res.Success || !strings.Contains(res.Error, "not on a Friday") {
		t.Fatalf("got %+v", res)
	}
	if len(*f.ran) != 0 {
		t.Fatal("a denied call ran")
	}
	if f.sink.recs[0].Decision != "denied" || f.sink.recs[0].Reason != "not on a Friday" {
		t.Errorf("audit %+v", f.sink.recs[0])
	}
}

// A request that timed out or was cancelled is not run, and the model and
// the audit trail are told which it was.
func TestTimedOutOrCancelledIsDenied(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		state store.State
		msg   string
		want  audit.Decision
	}{
		{store.TimedOut, "Nobody approved this probe call in time", audit.DecisionTimedOut},
		{store.Cancelled, "The approval request for this probe call was cancelled", audit.DecisionCancelled},
	} {
		f := newFixture(t, nil, nil)
		f.appr.answer = approval.Outcome{ID: "r3", State: c.state, By: "timeout"}
		res := f.eng.Call(context.Background(), "probe", json.RawMessage(`{"path":"x"}`))
		if res.Success || !strings.Contains(res.Error, c.msg) || len(*f.ran) != 0 {
			t.Fatalf("%s: got %+v, ran %v", c.state, res, *f.ran)
		}
		if d := f.sink.recs[0].Decision; d != c.want {
			t.Errorf("%s: audit decision %q, want %q", c.state, d, c.want)
		}
	}
}

func TestNoChannelFailsSafe(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nil approver", "approver without channel"} {
		f := newFixture(t, nil, func(o *Options) {
			if name == "nil approver" {
				o.Approver = nil
			}
		})
		f.appr.err = approval.ErrNoChannel
		res := f.eng.Call(context.Background(), "write_file", json.RawMessage(`{"path":"new.txt","content":"x"}`))
		// The model reads what it can act on; the operator's ways out
		// (--mode yolo, ...) go to the log.
		if res.Success || !strings.Contains(res.Error, "no person can be reached") || !strings.Contains(res.Error, "tell the user") || strings.Contains(res.Error, "--mode yolo") {
			t.Fatalf("%s: got %+v", name, res)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "new.txt")); !os.IsNotExist(err) {
			t.Fatalf("%s: the file was written without approval", name)
		}
	}
}

func TestDryRunExecutesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, func(o *Options) { o.DryRun = true })
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"new.txt","content":"x"}`},
		{"probe", `{"path":"x"}`},
	} {
		res := f.eng.Call(context.Background(), c.tool, json.RawMessage(c.args))
		if !res.Success || !strings.HasPrefix(res.Output, "[DRY-RUN]") {
			t.Fatalf("%s: got %+v", c.tool, res)
		}
	}
	if len(*f.ran) != 0 || len(f.appr.asked) != 0 {
		t.Fatal("dry run executed or asked")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "new.txt")); !os.IsNotExist(err) {
		t.Fatal("dry run wrote a file")
	}
	// Guards still refuse in dry-run: it shows what would really happen.
	if res := f.eng.Call(context.Background(), "read_file", json.RawMessage(`{"path":"../x"}`)); res.Success {
		t.Fatal("dry run skipped a hard guard")
	}
}

func TestPolicyDenyNamesRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *config.Config) {
		c.Security.ToolPolicy.Tools = map[string]string{"file_read": "deny"}
	}, nil)
	res := f.eng.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a"}`))
	if res.Success || !strings.Contains(res.Error, `security.tool_policy.tools.file_read = "deny"`) {
		t.Fatalf("got %+v", res)
	}
}

func TestAuditIsSanitised(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = config.ModeYolo }, nil)
	secret := "sk-proj-" + strings.Repeat("Z", 40)
	content := secret + strings.Repeat("y", 1000)
	f.eng.Call(context.Background(), "write_file", json.RawMessage(`{"path":"k.txt","content":"`+content+`"}`))
	b, _ := json.Marshal(f.sink.recs[0])
	if strings.Contains(string(b), secret) || strings.Contains(string(b), strings.Repeat("y", 300)) {
		t.Fatalf("audit record kept a secret or a long value: %s", b)
	}
	if !f.sink.recs[0].Success || f.sink.recs[0].Session != "s1" {
		t.Errorf("record %+v", f.sink.recs[0])
	}
}

func TestExplainAgreesWithCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, func(o *Options) { o.Approver = nil })
	cases := []struct{ tool, args, want string }{
		{"read_file", `{"path":"x"}`, "allow"},
		{"read_file", `{"path":"../x"}`, "deny"},
		{"write_file", `{"path":"x","content":""}`, "ask"},
		{"delete_file", `{"path":"x"}`, "deny"},
		{"nope", `{}`, "deny"},
		{"read_file", `{"path":"x","more":1}`, "deny"},
	}
	for _, c := range cases {
		x := f.eng.Explain(c.tool, json.RawMessage(c.args))
		if x.Decision != c.want {
			t.Errorf("Explain(%s %s) = %+v, want %s", c.tool, c.args, x, c.want)
		}
		res := f.eng.Call(context.Background(), c.tool, json.RawMessage(c.args))
		switch x.Decision {
		case "deny":
			if res.Success {
				t.Errorf("explain says deny, Call succeeded: %s %s", c.tool, c.args)
			}
		case "ask":
			if !strings.Contains(res.Error, "no person can be reached") {
				t.Errorf("explain says ask, Call did not ask: %+v", res)
			}
		}
	}
}

func TestApprovalBoundToArguments(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"path":"shown"}`)
	good := approval.BindingHash("probe", args, "", "s1")
	tests := []struct {
		name    string
		out     approval.Outcome
		wantRun bool
	}{
		{"matching args and hash", approval.Outcome{ID: "a", Approved: true, State: store.Approved, Args: args, ArgsHash: good}, true},
		{"other args approved", approval.Outcome{ID: "b", Approved: true, State: store.Approved, Args: json.RawMessage(`{"path":"other"}`), ArgsHash: good}, false},
		{"hash of another session", approval.Outcome{ID: "c", Approved: true, State: store.Approved, Args: args, ArgsHash: approval.BindingHash("probe", args, "", "s2")}, false},
		{"hash of another tool", approval.Outcome{ID: "d", Approved: true, State: store.Approved, Args: args, ArgsHash: approval.BindingHash("write_file", args, "", "s1")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil, nil)
			f.eng.workRoot = ""
			f.appr.answer = tt.out
			res := f.eng.Call(context.Background(), "probe", args)
			if ran := len(*f.ran) > 0; ran != tt.wantRun || res.Success != tt.wantRun {
				t.Fatalf("ran=%v result=%+v, want run=%v", ran, res, tt.wantRun)
			}
		})
	}
}

func TestAbortStopsTheRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	f.appr.err = approval.ErrAborted
	res := f.eng.Call(context.Background(), "probe", json.RawMessage(`{"path":"x"}`))
	if res.Success || !res.Stop || len(*f.ran) != 0 {
		t.Fatalf("got %+v", res)
	}
}
