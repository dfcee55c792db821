package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/store"
)

// A `warden mcp` process killed with SIGKILL in the middle of a stream of
// calls (several in flight at once, so records share transactions) has
// committed the audit record of every call whose result reached the
// client, and its chain still verifies.
func TestKillDuringCallsKeepsEveryAnsweredRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs warden")
	}
	t.Parallel()
	h := newHome(t, "")
	const files = 5000
	for i := range files {
		if err := os.WriteFile(filepath.Join(h.ws, fmt.Sprintf("f%d.txt", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	after := int64(0) // the chain's length before this round
	for round := range 3 {
		cmd := exec.Command(warden(t), "mcp", "--workspace", h.ws)
		cmd.Env = h.env
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "crash"}, nil).Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu       sync.Mutex
			answered []string
			next     atomic.Int64 // the next file to read
			wg       sync.WaitGroup
			killed   = make(chan struct{})
			killOnce sync.Once
		)
		// Kill after a number of answers that differs per round, so the
		// kill lands at different points of a batch.
		killAt := 150 + 97*round
		kill := func() {
			killOnce.Do(func() {
				cmd.Process.Kill() // SIGKILL: no deferred cleanup runs
				close(killed)
			})
		}
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= files {
						return
					}
					name := fmt.Sprintf("f%d.txt", i)
					p := &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": name}}
					ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
					res, err := cs.CallTool(ctx, p)
					cancel()
					if err != nil {
						return // the connection died with the process
					}
					if res.IsError {
						t.Errorf("read_file %s: %v", name, res.Content)
						return
					}
					mu.Lock()
					answered = append(answered, name)
					n := len(answered)
					mu.Unlock()
					if n == killAt {
						kill()
					}
				}
			}()
		}
		wg.Wait()
		select {
		case <-killed:
		default:
			t.Fatalf("round %d: every call was answered before the kill", round)
		}
		cs.Close()
		cmd.Wait()

		st, err := store.OpenSQLite(h.db, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := st.Audit(context.Background(), store.AuditFilter{Event: "tool_call", After: after})
		if err != nil {
			t.Fatal(err)
		}
		recorded := map[string]bool{}
		for _, r := range rows {
			var a struct{ Path string }
			json.Unmarshal(r.Record.Args, &a)
			recorded[a.Path] = true
		}
		n, _, verr := st.VerifyAudit(context.Background())
		st.Close()
		if verr != nil {
			t.Fatalf("round %d: %v", round, verr)
		}
		missing := 0
		for _, name := range answered {
			if !recorded[name] {
				missing++
				t.Errorf("round %d: the result of read_file %s was returned but its audit record is not in the database", round, name)
			}
		}
		t.Logf("round %d: %d results received before and after the kill, %d missing, %d rows in the chain", round, len(answered), missing, n)
		out, err := exec.Command(warden(t), "audit", "verify", "--db", h.db).CombinedOutput()
		if err != nil {
			t.Fatalf("round %d: warden audit verify: %v\n%s", round, err, out)
		}
		after = n
	}
}
