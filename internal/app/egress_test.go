package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/approval/approvaltest"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/rulefile"
	"github.com/wardenhq/warden/internal/rules"
	"github.com/wardenhq/warden/internal/store"
)

// A question from the egress proxy is an approval request like any other:
// pending in the store until a supervisor decides, bound to host and port,
// and a grant for the host admits its next connection without asking.
func TestEgressAsker(t *testing.T) {
	st := approvaltest.Store(t)
	b := approvaltest.Broker(t, st, nil)
	a := &EgressAsker{Approver: b, Agent: "build"}
	q := egress.Question{Host: "registry.example", Port: 443, Workspace: "/w", Session: "s1", Command: "npm install", Secrets: []string{"NPM_TOKEN"}}

	type res struct {
		ans egress.Answer
		err error
	}
	ask := func() chan res {
		ch := make(chan res, 1)
		go func() {
			ans, err := a.Ask(context.Background(), q)
			ch <- res{ans, err}
		}()
		return ch
	}

	ch := ask()
	id := approvaltest.PendingID(t, st)
	got, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tool != EgressTool || string(got.Args) != `{"host":"registry.example","port":443}` || got.Workspace != "/w" ||
		got.Session != "s1" || !strings.Contains(got.Risk, "npm install") || !strings.Contains(got.Risk, "NPM_TOKEN") {
		t.Errorf("request %+v", got)
	}
	if _, err := b.Decide(context.Background(), id, "alice", false, "not this one"); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil || r.ans.Allow || r.ans.By != "alice" || r.ans.Reason != "not this one" {
		t.Errorf("denied: %+v %v", r.ans, r.err)
	}

	ch = ask()
	id = approvaltest.PendingID(t, st)
	if _, _, err := b.ApproveWithGrant(context.Background(), id, "bob", "", 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.err != nil || !r.ans.Allow || r.ans.By != "bob" {
		t.Errorf("approved: %+v %v", r.ans, r.err)
	}
	if a, err := st.Get(context.Background(), id); err != nil || a.State != store.Executed {
		t.Errorf("the approved request is %v, %v; want executed", a.State, err)
	}

	// Another command, same host and port: the grant admits it at once.
	q.Command = "curl https://registry.example/"
	done := make(chan res, 1)
	go func() { ans, err := a.Ask(context.Background(), q); done <- res{ans, err} }()
	select {
	case r := <-done:
		if r.err != nil || !r.ans.Allow {
			t.Errorf("granted: %+v %v", r.ans, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the grant did not admit the next connection")
	}
}

// With no channel to reach a person, the question fails safe: an error
// the proxy turns into a refusal naming why.
func TestEgressAskerNoChannel(t *testing.T) {
	st := approvaltest.Store(t)
	b := approvaltest.Broker(t, st, func(o *approval.Options) { o.Remote = false })
	_, err := (&EgressAsker{Approver: b}).Ask(context.Background(), egress.Question{Host: "x.example", Port: 443, Workspace: "/w"})
	if !errors.Is(err, approval.ErrNoChannel) || !strings.Contains(err.Error(), "x.example:443") {
		t.Errorf("err %v; want ErrNoChannel naming the host", err)
	}
}

func TestExplainNet(t *testing.T) {
	cfg := config.Default()
	cfg.Sandbox = &config.Sandbox{NetworkMode: config.NetworkAllowlist, Egress: config.Egress{
		Allow: []string{"*.pypi.org", "localhost:5432"}, Deny: []string{"evil.pypi.org"}, Unknown: "ask",
		Secrets: []config.EgressSecret{{Env: "PYPI_TOKEN", Hosts: []string{"upload.pypi.org"}}}}}
	cfg.Rules = []config.Rule{
		{Tool: EgressTool, Host: "registry.example:443", Decision: "allow", Workspace: "/w", ID: "r1"},
		{Tool: EgressTool, Host: "registry.example:443", Decision: "deny", Workspace: "/other", ID: "r2"},
		{Tool: EgressTool, Host: "evil.pypi.org", Decision: "allow", ID: "r3"}, // the policy's deny comes first
	}
	names := egress.StaticResolver{"files.pypi.org": {netip.MustParseAddr("151.101.0.223"), netip.MustParseAddr("10.0.0.7")},
		"localhost": {netip.MustParseAddr("127.0.0.1")}, "upload.pypi.org": {netip.MustParseAddr("151.101.0.224")}}
	for _, c := range []struct {
		in       string
		decision string
		want     []string
	}{
		{"files.pypi.org", "allow", []string{"files.pypi.org:443", `allow "*.pypi.org"`, "10.0.0.7: refused", "151.101.0.223: dialled"}},
		{"localhost:5432", "allow", []string{"exactly", "127.0.0.1: dialled"}},
		{"EVIL.pypi.org.:443", "deny", []string{"evil.pypi.org:443", `deny "evil.pypi.org"`}},
		{"example.com:22", "ask", []string{"ask a person"}},
		{"upload.pypi.org", "allow", []string{"PYPI_TOKEN"}},
		{"[::1]", "deny", []string{"[::1]:443", "loopback"}},
		{"registry.example", "allow", []string{"ask a person", "rules: allow network_connect host registry.example:443 (r1) decides instead of a person"}},
		{"registry.example:80", "ask", []string{"ask a person"}},
	} {
		x, err := ExplainNet(context.Background(), cfg, "/w", c.in, names)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		all := strings.Join(x.Lines, "\n")
		if x.Decision != c.decision || x.Network != "allowlist" {
			t.Errorf("%s: %+v", c.in, x)
		}
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: explanation\n%s\nlacks %q", c.in, all, w)
			}
		}
	}
	for _, bad := range []string{"evil.com\x00.ok", "a b", "2130706433", "host:99999"} {
		if _, err := ExplainNet(context.Background(), cfg, "/w", bad, nil); err == nil {
			t.Errorf("ExplainNet(%q) accepted it", bad)
		}
	}
}

type recordSink struct {
	mu   sync.Mutex
	recs []*audit.Record
}

func (s *recordSink) Write(_ context.Context, r *audit.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r)
	return nil
}

func TestEgressAudit(t *testing.T) {
	sink := &recordSink{}
	a := NewEgressAudit(sink, nil)
	a.EgressEvent(egress.Event{Time: time.Now(), Workspace: "/w", Session: "s", Command: "curl x", Proto: "connect", Host: "github.com", Port: 443,
		Addr: "140.82.121.3:443", Decision: "allow", Rule: `allow "github.com:443"`, DecidedBy: "policy", TLS: "sni", BytesUp: 10, BytesDown: 20, Duration: time.Second})
	a.EgressEvent(egress.Event{Proto: "http", Host: "x.pastebin.com", Port: 80, Decision: "deny", Rule: `deny "*.pastebin.com"`, Reason: "denied"})
	a.EgressEvent(egress.Event{Proto: "connect", Host: "api.example", Port: 443, Decision: "allow", Reason: "could not connect"})
	a.Close()
	if len(sink.recs) != 3 {
		t.Fatalf("%d records", len(sink.recs))
	}
	r := sink.recs[0]
	if r.Event != "egress" || r.Tool != EgressTool || r.Decision != audit.DecisionAllow || !r.Success || r.Duration != 1000 ||
		string(r.Args) != `{"host":"github.com","port":443,"proto":"connect","addr":"140.82.121.3:443","tls":"sni","bytes_up":10,"bytes_down":20,"command":"curl x"}` {
		t.Errorf("allowed: %+v %s", r, r.Args)
	}
	if r := sink.recs[1]; r.Decision != audit.DecisionDeny || r.Reason != "denied" || r.Success {
		t.Errorf("denied: %+v", r)
	}
	if r := sink.recs[2]; r.Decision != audit.DecisionAllow || r.Success || r.Error != "could not connect" {
		t.Errorf("failed: %+v", r)
	}
}

// "Always" for a host a jailed command connects to writes a connection
// rule for that host and port into the user config, scoped to the
// workspace; the next connection there is admitted by the rule without a
// person, and nothing wider is: another port, a subdomain, another
// workspace are still asked. A deny rule refuses without asking.
func TestEgressAlways(t *testing.T) {
	st := approvaltest.Store(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	b := approvaltest.Broker(t, st, func(o *approval.Options) { o.Rules = rulefile.User{Path: path} })
	a := &EgressAsker{Approver: b, Rules: func(ws string) (*rules.Set, error) {
		rs, err := config.FileRules(path)
		if err != nil {
			return nil, err
		}
		return config.RuleSet(&config.Config{Rules: rs}, ws)
	}}
	q := egress.Question{Host: "registry.example", Port: 443, Workspace: "/w", Session: "s1"}
	ask := func(q egress.Question) chan egress.Answer {
		ch := make(chan egress.Answer, 1)
		go func() {
			ans, err := a.Ask(context.Background(), q)
			if err != nil {
				t.Error(err)
			}
			ch <- ans
		}()
		return ch
	}
	wait := func(ch chan egress.Answer) egress.Answer {
		t.Helper()
		select {
		case ans := <-ch:
			return ans
		case <-time.After(5 * time.Second):
			t.Fatal("the connection is still waiting for a person")
			return egress.Answer{}
		}
	}
	// decide answers the one pending question.
	decide := func(always bool) string {
		t.Helper()
		id := approvaltest.PendingID(t, st)
		var err error
		if always {
			_, _, err = b.ApproveAlways(context.Background(), id, "alice", "", nil)
		} else {
			_, err = b.Decide(context.Background(), id, "alice", false, "no")
		}
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	ch := ask(q)
	id := decide(true)
	if ans := <-ch; !ans.Allow || ans.By != "alice" {
		t.Fatalf("the first connection: %+v", ans)
	}
	written, err := config.FileRules(path)
	if err != nil || len(written) != 1 {
		t.Fatalf("written: %+v %v", written, err)
	}
	if r := written[0]; r.Tool != EgressTool || r.Host != "registry.example:443" || r.Workspace != "/w" || r.Decision != "allow" || r.RequestID != id {
		t.Fatalf("written rule %+v", r)
	}

	// The same host and port: the rule admits it, nobody is asked.
	if ans := wait(ask(q)); !ans.Allow || ans.By != "rules:"+written[0].ID {
		t.Fatalf("the second connection: %+v", ans)
	}
	if l, _ := st.List(context.Background(), store.Filter{State: store.Pending}); len(l) != 0 {
		t.Fatalf("a person was asked again: %+v", l[0])
	}

	// Nothing wider than the host and port approved.
	for _, other := range []egress.Question{
		{Host: "registry.example", Port: 80, Workspace: "/w"},
		{Host: "x.registry.example", Port: 443, Workspace: "/w"},
		{Host: "registry.example", Port: 443, Workspace: "/other"},
	} {
		ch := ask(other)
		decide(false)
		if ans := <-ch; ans.Allow || ans.By != "alice" {
			t.Errorf("%+v was not put to a person: %+v", other, ans)
		}
	}

	// A deny rule the user wrote refuses without asking.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[[rules]]\ntool = %q\nhost = \"*.evil.example\"\ndecision = \"deny\"\n", EgressTool)
	f.Close()
	if ans := wait(ask(egress.Question{Host: "x.evil.example", Port: 443, Workspace: "/w"})); ans.Allow || !strings.HasPrefix(ans.By, "rules:") || !strings.Contains(ans.Reason, "evil.example") {
		t.Errorf("denied by rule: %+v", ans)
	}
}
