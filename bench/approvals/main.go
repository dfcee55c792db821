// Command approvals loads a real `warden serve` on loopback: it keeps about
// -pending requests waiting in the database, runs -clients concurrent
// supervisors that list pending requests and decide them for -duration, and
// then checks the database: no lost and no double decision, and an intact
// audit chain. It prints p50/p99 latencies.
//
//	go run ./bench/approvals -warden ./warden
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

func main() {
	wardenBin := flag.String("warden", "warden", "the warden binary")
	clients := flag.Int("clients", 50, "concurrent API clients")
	duration := flag.Duration("duration", 30*time.Second, "how long the clients run")
	pending := flag.Int("pending", 1000, "pending requests kept in the database")
	flag.Parse()
	if err := run(*wardenBin, *clients, *duration, *pending); err != nil {
		fmt.Fprintln(os.Stderr, "bench: error:", err)
		os.Exit(1)
	}
}

const nSup = 5

func run(bin string, clients int, dur time.Duration, pending int) error {
	dir, err := os.MkdirTemp("", "warden-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "warden.db")
	cfg := filepath.Join(dir, "warden.toml")
	var toml strings.Builder
	toml.WriteString("[security.approval]\nsupervisors = [")
	tokens := make([]string, nSup)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	for i := range nSup {
		tokens[i] = approval.NewID()
		fmt.Fprintf(&toml, "{id = \"sup%d\", token_env = \"BENCH_TOKEN_%d\"},", i, i)
		env = append(env, fmt.Sprintf("BENCH_TOKEN_%d=%s", i, tokens[i]))
	}
	toml.WriteString("]\n")
	if err := os.WriteFile(cfg, []byte(toml.String()), 0o600); err != nil {
		return err
	}

	// This process owns the requests, as a waiting agent would: it stays alive.
	st, err := store.OpenSQLite(db, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	var created atomic.Int64
	create := func(n int) error {
		for range n {
			now := time.Now()
			args := json.RawMessage(fmt.Sprintf(`{"command":"make test-%d"}`, created.Load()))
			a := &store.Approval{ID: approval.NewID(), Tool: "run_command", Args: args, ArgsHash: approval.BindingHash("run_command", args, "/w", "s"),
				Workspace: "/w", Session: "s", State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: store.CurrentOwner()}
			if err := st.Create(context.Background(), a, nil); err != nil {
				return err
			}
			created.Add(1)
		}
		return nil
	}
	if err := create(pending); err != nil {
		return err
	}

	srv := exec.Command(bin, "--config", cfg, "serve", "--addr", "127.0.0.1:0", "--db", db)
	srv.Env = env
	stderr, _ := srv.StderrPipe()
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Process.Kill()
	base, err := serverURL(stderr)
	if err != nil {
		return err
	}
	go io.Copy(io.Discard, stderr)

	var decided atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	// Keep about `pending` requests waiting.
	var prodErr error
	var prodWG sync.WaitGroup
	prodWG.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if gap := int(int64(pending) - (created.Load() - decided.Load())); gap > 0 {
				if err := create(min(gap, 200)); err != nil {
					prodErr = err
					return
				}
			}
		}
	})

	type win struct{ sup, state string }
	var mu sync.Mutex
	wins := map[string][]win{}
	var listLat, decideLat []time.Duration
	var conflicts, failures atomic.Int64
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			sup := c % nSup
			tok := "Bearer " + tokens[sup]
			var ll, dl []time.Duration
			for ctx.Err() == nil {
				t0 := time.Now()
				var list struct {
					Approvals []store.Approval `json:"approvals"`
				}
				code, err := call(hc, "GET", base+"/api/approvals?status=pending&limit=50", tok, "", &list)
				ll = append(ll, time.Since(t0))
				if err != nil || code != 200 {
					failures.Add(1)
					continue
				}
				if len(list.Approvals) == 0 {
					continue
				}
				a := list.Approvals[rand.IntN(len(list.Approvals))]
				verb, state := "approve", "APPROVED"
				if rand.IntN(2) == 0 {
					verb, state = "deny", "DENIED"
				}
				t0 = time.Now()
				code, err = call(hc, "POST", base+"/api/approvals/"+a.ID+"/"+verb, tok, `{"reason":"bench"}`, nil)
				dl = append(dl, time.Since(t0))
				switch {
				case err != nil:
					failures.Add(1)
				case code == 200:
					decided.Add(1)
					mu.Lock()
					wins[a.ID] = append(wins[a.ID], win{fmt.Sprintf("sup%d", sup), state})
					mu.Unlock()
				case code == 409:
					conflicts.Add(1)
				default:
					failures.Add(1)
				}
			}
			mu.Lock()
			listLat = append(listLat, ll...)
			decideLat = append(decideLat, dl...)
			mu.Unlock()
		})
	}
	wg.Wait()
	prodWG.Wait()
	if prodErr != nil {
		return prodErr
	}
	srv.Process.Signal(syscall.SIGTERM)
	srv.Wait()

	// Check every acknowledged decision against the database, and every
	// decision in the database against the acknowledgements.
	var double, lost, mismatched int
	for id, ws := range wins {
		if len(ws) > 1 {
			double++
		}
		a, err := st.Get(context.Background(), id)
		if err != nil || string(a.State) != ws[0].state || a.DecidedBy != ws[0].sup {
			mismatched++
		}
	}
	all, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		return err
	}
	var inDB int
	for _, a := range all {
		if a.State != store.Pending {
			inDB++
			if _, ok := wins[a.ID]; !ok {
				lost++
			}
		}
	}
	var auditDup int
	st.DB().QueryRow(`SELECT COUNT(*) FROM (SELECT request_id FROM audit WHERE event = 'approval' GROUP BY request_id HAVING COUNT(*) > 1)`).Scan(&auditDup)
	rows, _, verr := st.VerifyAudit(context.Background())

	fmt.Printf("clients=%d duration=%s pending≈%d requests_created=%d\n", clients, dur, pending, created.Load())
	fmt.Printf("list   n=%d %s\n", len(listLat), pct(listLat))
	fmt.Printf("decide n=%d %s\n", len(decideLat), pct(decideLat))
	fmt.Printf("decisions won=%d (%.0f/s) conflicts(409)=%d failures=%d\n", len(wins), float64(len(wins))/dur.Seconds(), conflicts.Load(), failures.Load())
	fmt.Printf("check: decided_in_db=%d double=%d lost=%d mismatched=%d audit_duplicates=%d audit_rows=%d audit_chain=%v\n",
		inDB, double, lost, mismatched, auditDup, rows, okOr(verr))
	if double+lost+mismatched+auditDup > 0 || verr != nil || failures.Load() > 0 || inDB != len(wins) {
		return fmt.Errorf("lost or double decisions")
	}
	return nil
}

func okOr(err error) string {
	if err == nil {
		return "intact"
	}
	return err.Error()
}

func call(hc *http.Client, method, url, auth, body string, out any) (int, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", auth)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, err
		}
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func serverURL(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "serving approvals on "); ok {
			u, _, _ := strings.Cut(rest, " ")
			return u, nil
		}
	}
	return "", fmt.Errorf("warden serve did not start")
}

func pct(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	slices.Sort(d)
	p := func(q float64) time.Duration {
		return d[min(len(d)-1, int(q*float64(len(d))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("p50=%s p90=%s p99=%s max=%s", p(0.50), p(0.90), p(0.99), d[len(d)-1].Round(10*time.Microsecond))
}
