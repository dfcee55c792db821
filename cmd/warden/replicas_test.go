package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/store"
	"github.com/wardenhq/warden/internal/store/pgtest"
	"github.com/wardenhq/warden/internal/testenv"
)

// Three real `warden serve` processes on one PostgreSQL database, started
// together on an empty database: a call waiting on one replica is decided
// through another; deciders racing on different replicas; the replica
// holding a waiting call killed with SIGKILL; a replica restarted while
// decisions go on.

const (
	aliceTok = "alice-token-0123456789abcdef"
	bobTok   = "bob-token-0123456789abcdefgh"
	mcpTok   = "mcp-client-token-0123456789abcdef"
	leaseFor = 3 * time.Second
)

type replica struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
}

type fleet struct {
	t       *testing.T
	bin     string
	dir     string
	env     []string
	dbURL   string
	st      *store.DB
	mu      sync.Mutex
	members []*replica
}

// wardenBin is this test binary under the name warden (testscript.Main
// runs it as the command).
func wardenBin(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "warden")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func newFleet(t *testing.T, n int) *fleet {
	f := &fleet{t: t, bin: wardenBin(t), dir: t.TempDir(), dbURL: pgtest.URL(t)}
	ws := filepath.Join(f.dir, "ws")
	os.MkdirAll(ws, 0o755)
	cfg := fmt.Sprintf(`[security.approval]
notify_channel = "api"
timeout_secs = 120
supervisors = [{ id = "alice", token_env = "ALICE_TOKEN" }, { id = "bob", token_env = "BOB_TOKEN" }]
[store]
url_env = "TEAM_DATABASE_URL"
lease_secs = %d
`, int(leaseFor/time.Second))
	os.MkdirAll(filepath.Join(f.dir, "config", "warden"), 0o700)
	if err := os.WriteFile(filepath.Join(f.dir, "config", "warden", "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f.env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(f.dir, "config"), "XDG_STATE_HOME="+filepath.Join(f.dir, "state"),
		"HOME="+f.dir, "TEAM_DATABASE_URL="+f.dbURL, "ALICE_TOKEN="+aliceTok, "BOB_TOKEN="+bobTok,
		"WARDEN_MCP_TOKEN_CI="+mcpTok, "WARDEN_DB=", "WARDEN_DATABASE_URL=")
	// All of them at once, on an empty database: their migrations race.
	var wg sync.WaitGroup
	f.members = make([]*replica, n)
	for i := range n {
		wg.Go(func() { f.members[i] = f.start() })
	}
	wg.Wait()
	for i, m := range f.members {
		if m == nil {
			t.Fatalf("replica %d did not start", i)
		}
	}
	t.Cleanup(func() {
		for _, m := range f.members {
			m.cmd.Process.Signal(syscall.SIGTERM)
			<-m.done
		}
	})
	st, err := store.OpenPostgres(context.Background(), f.dbURL, &store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	return f
}

// start runs one more `warden serve` and waits until it listens.
func (f *fleet) start() *replica { return f.startAs("") }

// startAs runs `warden serve` under another hostname (its own UTS
// namespace: another host, as far as the store can tell), or this one's
// when host is "".
func (f *fleet) startAs(host string) *replica {
	args := []string{f.bin, "serve", "--addr", "127.0.0.1:0", "--mcp-workspace", "ws=" + filepath.Join(f.dir, "ws")}
	if host != "" {
		args = append([]string{"unshare", "--uts", "--", "sh", "-c", `hostname "$0" && exec "$@"`, host}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = f.env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		f.t.Error(err)
		return nil
	}
	r := &replica{cmd: cmd, done: make(chan struct{})}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		if _, rest, ok := strings.Cut(line, "serving approvals on "); ok {
			r.base, _, _ = strings.Cut(rest, " ")
			if !strings.Contains(rest, "postgres://") || strings.Contains(rest, "@127.0.0.1") && strings.Contains(rest, ":"+pgPassword(f.dbURL)+"@") {
				f.t.Errorf("serve names its database as %q", rest)
			}
			break
		}
		f.t.Logf("serve: %s", line)
	}
	go func() {
		for sc.Scan() {
		}
		cmd.Wait()
		close(r.done)
	}()
	if r.base == "" {
		f.t.Error("serve did not start")
		return nil
	}
	return r
}

func pgPassword(u string) string {
	_, rest, _ := strings.Cut(u, "://")
	userinfo, _, _ := strings.Cut(rest, "@")
	_, pw, _ := strings.Cut(userinfo, ":")
	return pw
}

type bearerRT struct{ tok string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// callOn starts a supervised write_file through replica i's MCP endpoint;
// the result arrives on the returned channel.
func (f *fleet) callOn(ctx context.Context, i int, path string) <-chan *sdk.CallToolResult {
	out := make(chan *sdk.CallToolResult, 1)
	tr := &sdk.StreamableClientTransport{Endpoint: f.members[i].base + "/mcp/ws", HTTPClient: &http.Client{Transport: bearerRT{mcpTok}}, MaxRetries: -1}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "replica-test"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		f.t.Fatalf("connect to replica %d: %v", i, err)
	}
	go func() {
		defer cs.Close()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: map[string]string{"path": path, "content": "x"}})
		if err != nil {
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		out <- res
	}()
	return out
}

// pendingFor waits for the PENDING request that writes path.
func (f *fleet) pendingFor(path string) *store.Approval {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l, _ := f.st.List(context.Background(), store.Filter{State: store.Pending})
		for _, a := range l {
			if strings.Contains(string(a.Args), `"`+path+`"`) {
				return a
			}
		}
	}
	f.t.Fatalf("no pending request for %s", path)
	return nil
}

// decide approves or denies id through replica i's API as tok's supervisor.
func (f *fleet) decide(i int, id, tok string, approve bool) (int, error) {
	verb := "deny"
	if approve {
		verb = "approve"
	}
	req, _ := http.NewRequest("POST", f.members[i].base+"/api/approvals/"+id+"/"+verb, strings.NewReader(`{"reason":"replica test"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestReplicas(t *testing.T) {
	f := newFleet(t, 3)
	ctx := t.Context()
	ws := filepath.Join(f.dir, "ws")

	// The migrations raced: each version is recorded once.
	v, err := f.st.SchemaVersions(ctx)
	if err != nil || len(v) < 4 {
		t.Fatalf("schema_migrations after three replicas started together: %v, %v", v, err)
	}
	for i, n := range v {
		if n != i+1 {
			t.Fatalf("schema_migrations after three replicas started together: %v", v)
		}
	}

	t.Run("decided on another replica", func(t *testing.T) {
		res := f.callOn(ctx, 0, "a.txt")
		a := f.pendingFor("a.txt")
		decided := time.Now()
		if code, err := f.decide(1, a.ID, aliceTok, true); err != nil || code != 200 {
			t.Fatalf("approve through replica 1: %d, %v", code, err)
		}
		select {
		case r := <-res:
			if r.IsError {
				t.Fatalf("the call failed: %s", text(r))
			}
			t.Logf("the call on replica 0 resumed %s after the approval on replica 1", time.Since(decided))
		case <-time.After(10 * time.Second):
			t.Fatal("the call on replica 0 did not resume")
		}
		if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "x" {
			t.Fatalf("a.txt: %q, %v", b, err)
		}
		got, _ := f.st.Get(ctx, a.ID)
		if got.State != store.Executed || got.DecidedBy != "alice" {
			t.Errorf("request %s by %q, want EXECUTED by alice", got.State, got.DecidedBy)
		}
	})

	t.Run("racing deciders on three replicas", func(t *testing.T) {
		for round := range 5 {
			path := fmt.Sprintf("race%d.txt", round)
			res := f.callOn(ctx, round%3, path)
			a := f.pendingFor(path)
			codes := make([]int, 6)
			var wg sync.WaitGroup
			for i := range codes {
				wg.Go(func() {
					tok := []string{aliceTok, bobTok}[i%2]
					codes[i], _ = f.decide(i%3, a.ID, tok, i%2 == 0)
				})
			}
			wg.Wait()
			wins, winner := 0, -1
			for i, c := range codes {
				switch c {
				case 200:
					wins, winner = wins+1, i
				case 409:
				default:
					t.Errorf("round %d decider %d: HTTP %d", round, i, c)
				}
			}
			if wins != 1 {
				t.Fatalf("round %d: %d deciders won (%v), want 1", round, wins, codes)
			}
			r := <-res
			_, statErr := os.Stat(filepath.Join(ws, path))
			approved := winner%2 == 0
			if approved != (!r.IsError && statErr == nil) {
				t.Fatalf("round %d: the winner approved=%v, but the call returned error=%v and the file exists=%v: %s",
					round, approved, r.IsError, statErr == nil, text(r))
			}
		}
	})

	t.Run("replica killed while a call waits on it", func(t *testing.T) {
		f.callOn(ctx, 2, "killed.txt")
		a := f.pendingFor("killed.txt")
		victim := f.members[2]
		victim.cmd.Process.Signal(syscall.SIGKILL)
		<-victim.done
		killed := time.Now()
		// Before its lease runs out a supervisor may still approve it; it
		// is never claimed, and cancelled all the same.
		if code, err := f.decide(0, a.ID, aliceTok, true); err != nil || code != 200 {
			t.Fatalf("approve within the lease: %d, %v", code, err)
		}
		var cancelledAfter time.Duration
		for deadline := killed.Add(leaseFor + 10*time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got, _ := f.st.Get(ctx, a.ID); got.State == store.Cancelled {
				cancelledAfter = time.Since(killed)
				break
			}
		}
		if cancelledAfter == 0 {
			got, _ := f.st.Get(ctx, a.ID)
			t.Fatalf("request still %s %s after the kill", got.State, time.Since(killed))
		}
		t.Logf("cancelled %s after the kill (lease %s, sweep every 2 s)", cancelledAfter, leaseFor)
		if cancelledAfter > leaseFor+3*time.Second {
			t.Errorf("cancelled %s after the kill; lease %s plus one sweep is the bound", cancelledAfter, leaseFor)
		}
		if code, _ := f.decide(1, a.ID, bobTok, true); code != 409 {
			t.Errorf("a decision after the cancellation: HTTP %d, want 409", code)
		}
		if _, err := os.Stat(filepath.Join(ws, "killed.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed replica's call ran: %v", err)
		}
		// It comes back: nothing of it runs later.
		f.mu.Lock()
		f.members[2] = f.start()
		f.mu.Unlock()
		time.Sleep(time.Second)
		if _, err := os.Stat(filepath.Join(ws, "killed.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed replica's call ran after the restart: %v", err)
		}
	})

	// The same, for a replica on another host: no pid to look at, only its
	// lease speaks for it, and it is cancelled once the lease runs out.
	t.Run("replica on another host killed while a call waits on it", func(t *testing.T) {
		testenv.Need(t, "root", "unshare")
		f.mu.Lock()
		other := f.startAs("another-host")
		f.members = append(f.members, other)
		i := len(f.members) - 1
		f.mu.Unlock()
		f.callOn(ctx, i, "remote.txt")
		a := f.pendingFor("remote.txt")
		if a.Owner.Host != "another-host" || a.Owner.Lease == "" {
			t.Fatalf("request owned by %+v", a.Owner)
		}
		other.cmd.Process.Signal(syscall.SIGKILL)
		<-other.done
		killed := time.Now()
		var cancelledAfter time.Duration
		for deadline := killed.Add(leaseFor + 10*time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got, _ := f.st.Get(ctx, a.ID); got.State == store.Cancelled {
				cancelledAfter = time.Since(killed)
				if !strings.Contains(got.Reason, "stopped renewing its lease") {
					t.Errorf("cancelled because %q", got.Reason)
				}
				break
			}
		}
		if cancelledAfter == 0 {
			t.Fatalf("request still pending %s after the kill", time.Since(killed))
		}
		t.Logf("another host's request cancelled %s after the kill (lease %s, sweep every 2 s)", cancelledAfter, leaseFor)
		if cancelledAfter > leaseFor+3*time.Second {
			t.Errorf("cancelled %s after the kill; lease %s plus one sweep is the bound", cancelledAfter, leaseFor)
		}
		if code, _ := f.decide(0, a.ID, aliceTok, true); code != 409 {
			t.Errorf("a decision after the cancellation: HTTP %d, want 409", code)
		}
		if _, err := os.Stat(filepath.Join(ws, "remote.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed replica's call ran: %v", err)
		}
		f.mu.Lock()
		f.members = f.members[:i]
		f.mu.Unlock()
	})

	t.Run("restart during decisions", func(t *testing.T) {
		const n = 12
		results := make([]<-chan *sdk.CallToolResult, n)
		ids := make([]string, n)
		for i := range n {
			path := fmt.Sprintf("restart%d.txt", i)
			results[i] = f.callOn(ctx, i%2*2, path) // replicas 0 and 2 hold the calls
			ids[i] = f.pendingFor(path).ID
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(50 * time.Millisecond)
			m := f.members[1]
			m.cmd.Process.Signal(syscall.SIGTERM)
			<-m.done
			f.mu.Lock()
			f.members[1] = f.start()
			f.mu.Unlock()
		})
		for i, id := range ids {
			for try := 0; ; try++ {
				f.mu.Lock()
				r := (i + try) % 3
				f.mu.Unlock()
				code, err := f.decide(r, id, aliceTok, true)
				if err == nil && code == 200 {
					break
				}
				if err == nil && code != 200 && code != 502 && code != 503 {
					t.Fatalf("request %d through replica %d: HTTP %d", i, r, code)
				}
				if try > 20 {
					t.Fatalf("request %d: no replica took the decision (%v)", i, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		wg.Wait()
		for i, res := range results {
			select {
			case r := <-res:
				if r.IsError {
					t.Errorf("call %d: %s", i, text(r))
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("call %d did not return", i)
			}
		}
	})

	// One chain, every decision in it once.
	n, head, err := f.st.VerifyAudit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := f.st.Audit(ctx, store.AuditFilter{Event: "approval"})
	perRequest := map[string]int{}
	for _, r := range rows {
		if r.Record.Decision == "approved" || r.Record.Decision == "denied" {
			perRequest[r.Record.RequestID]++
		}
	}
	for id, c := range perRequest {
		if c != 1 {
			t.Errorf("request %s has %d decision rows", id, c)
		}
	}
	b, _ := json.Marshal(map[string]any{"rows": n, "head": head})
	t.Logf("audit chain intact: %s", b)
}
