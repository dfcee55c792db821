// Command approvals loads real `warden serve` processes on loopback: it
// keeps about -pending requests waiting in the database, runs -clients
// concurrent supervisors that list pending requests and decide them for
// -duration, spread over -replicas servers sharing the database, and then
// checks the database: no lost and no double decision, and an intact audit
// chain. It prints p50/p99 latencies of list and decide, and how long a new
// request takes to reach each server's event stream (what the supervisor
// page shows).
//
//	go run ./bench/approvals -warden ./warden [-store sqlite|postgres] [-replicas N] [-rate R]
//
// By default the load is a closed loop: each client lists and decides
// again as soon as its last answer came, so latency is the clients' number
// divided by the throughput. With -rate R the load is offered: R
// list+decide pairs per second on a fixed schedule, slot i at i/R seconds,
// taken by client i mod -clients; list and pair latencies count from the
// slot, so a client still busy when its next slot comes is charged the
// wait (no coordinated omission), and decide counts from its request,
// sent as soon as the list answered. It also prints the CPU time the
// servers and this process (the clients and the producer) used per
// request, from /proc.
//
// With -store postgres, WARDEN_TEST_POSTGRES_URL names a server (an
// administrator's URL, as scripts/postgres prints it); the benchmark
// creates a fresh database in it.
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
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/store"
)

func main() {
	wardenBin := flag.String("warden", "warden", "the warden binary")
	clients := flag.Int("clients", 50, "concurrent API clients")
	duration := flag.Duration("duration", 30*time.Second, "how long the clients run")
	pending := flag.Int("pending", 1000, "pending requests kept in the database")
	backend := flag.String("store", "sqlite", "sqlite or postgres")
	replicas := flag.Int("replicas", 1, "warden serve processes sharing the database")
	rate := flag.Float64("rate", 0, "list+decide pairs per second over all clients on a fixed schedule (0: each client loops without pause)")
	flag.Parse()
	if *rate < 0 {
		fmt.Fprintln(os.Stderr, "bench: error: -rate must be positive (or 0 for the closed loop)")
		os.Exit(2)
	}
	if err := run(*wardenBin, *backend, *replicas, *clients, *duration, *pending, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "bench: error:", err)
		os.Exit(1)
	}
}

const nSup = 5

// database prepares an empty database of the kind asked for and returns
// the --db value for warden serve, the environment it needs, and the store
// for this process.
func database(backend, dir string) (dbFlag string, env []string, st *store.DB, cleanup func(), err error) {
	ctx := context.Background()
	switch backend {
	case "sqlite":
		db := filepath.Join(dir, "warden.db")
		st, err = store.OpenSQLite(db, nil)
		return db, nil, st, func() {}, err
	case "postgres":
		admin := os.Getenv("WARDEN_TEST_POSTGRES_URL")
		if admin == "" {
			return "", nil, nil, nil, fmt.Errorf("-store postgres needs WARDEN_TEST_POSTGRES_URL (run under scripts/postgres run)")
		}
		name := "bench_" + approval.NewID()[:12]
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return "", nil, nil, nil, err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return "", nil, nil, nil, err
		}
		u, _ := url.Parse(admin)
		u.Path = "/" + name
		st, err = store.OpenPostgres(ctx, u.String(), nil)
		drop := func() {
			c, err := pgx.Connect(ctx, admin)
			if err == nil {
				c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
				c.Close(ctx)
			}
		}
		return "postgres", []string{"WARDEN_DATABASE_URL=" + u.String()}, st, drop, err
	}
	return "", nil, nil, nil, fmt.Errorf("unknown -store %q", backend)
}

func run(bin, backend string, replicas, clients int, dur time.Duration, pending int, rate float64) error {
	dir, err := os.MkdirTemp("", "warden-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "warden.toml")
	var toml strings.Builder
	toml.WriteString("[security.approval]\nsupervisors = [")
	tokens := make([]string, nSup)
	env := append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	for i := range nSup {
		tokens[i] = approval.NewID()
		fmt.Fprintf(&toml, "{id = \"sup%d\", token_env = \"BENCH_TOKEN_%d\"},", i, i)
		env = append(env, fmt.Sprintf("BENCH_TOKEN_%d=%s", i, tokens[i]))
	}
	toml.WriteString("]\n")
	if err := os.WriteFile(cfg, []byte(toml.String()), 0o600); err != nil {
		return err
	}
	dbFlag, dbEnv, st, cleanup, err := database(backend, dir)
	if err != nil {
		return err
	}
	defer cleanup()
	defer st.Close()
	env = append(env, dbEnv...)

	// This process owns the requests, as a waiting agent would: it holds a
	// lease and stays alive.
	ctx0 := context.Background()
	lease, err := store.KeepLease(ctx0, st, store.CurrentOwner(), 0)
	if err != nil {
		return err
	}
	defer lease.Close()
	var created atomic.Int64
	var createdAt sync.Map // id → time the request was committed
	var createSome func(n int) error
	// create stores n requests from up to 16 goroutines at once: many
	// agents asking, so the producer keeps up with 50 deciders.
	create := func(n int) error {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		per := (n + 15) / 16
		for from := 0; from < n; from += per {
			k := min(per, n-from)
			wg.Go(func() { errs <- createSome(k) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	createSome = func(n int) error {
		for range n {
			now := time.Now()
			args := json.RawMessage(fmt.Sprintf(`{"command":"make test-%d"}`, created.Load()))
			a := &store.Approval{ID: approval.NewID(), Tool: "run_command", Args: args, ArgsHash: approval.BindingHash("run_command", args, "/w", "s"),
				Workspace: "/w", Session: "s", State: store.Pending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Owner: lease.Owner()}
			if err := st.Create(ctx0, a, nil); err != nil {
				return err
			}
			createdAt.Store(a.ID, time.Now())
			created.Add(1)
		}
		return nil
	}
	if err := create(pending); err != nil {
		return err
	}

	var bases []string
	var pids []int
	for range replicas {
		srv := exec.Command(bin, "--config", cfg, "serve", "--addr", "127.0.0.1:0", "--db", dbFlag)
		srv.Env = env
		stderr, _ := srv.StderrPipe()
		if err := srv.Start(); err != nil {
			return err
		}
		defer func() {
			srv.Process.Signal(syscall.SIGTERM)
			srv.Wait()
		}()
		base, err := serverURL(stderr)
		if err != nil {
			return err
		}
		go io.Copy(io.Discard, stderr)
		bases = append(bases, base)
		pids = append(pids, srv.Process.Pid)
	}

	ctx, cancel := context.WithTimeout(ctx0, dur)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 10 * time.Second}

	// Each server's event stream: how long a new request takes to show.
	var shownMu sync.Mutex
	var shown []time.Duration
	var streams sync.WaitGroup
	for i, base := range bases {
		streams.Go(func() {
			watchStream(ctx, base, "Bearer "+tokens[i%nSup], func(id string, at time.Time) {
				if t, ok := createdAt.Load(id); ok {
					shownMu.Lock()
					shown = append(shown, at.Sub(t.(time.Time)))
					shownMu.Unlock()
				}
			})
		})
	}
	time.Sleep(200 * time.Millisecond) // the streams connect

	var decided atomic.Int64
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
	var listLat, decideLat, pairLat []time.Duration
	var conflicts, failures, empty atomic.Int64
	var wg sync.WaitGroup
	cpuServers0, cpuSelf0 := cpuOf(pids...), cpuOf(os.Getpid())
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			sup := c % nSup
			base := bases[c%len(bases)]
			tok := "Bearer " + tokens[sup]
			var ll, dl, pl []time.Duration
			for k := 0; ctx.Err() == nil; k++ {
				t0 := time.Now()
				if rate > 0 {
					// Open loop: pair number c + k·clients of the whole
					// schedule starts at its slot, and its latencies count
					// from that slot, so a server that falls behind is
					// charged the wait of every pair queued behind it
					// (no coordinated omission).
					t0 = start.Add(time.Duration(float64(c+k*clients) / rate * float64(time.Second)))
					if !t0.Before(start.Add(dur)) {
						break
					}
					select {
					case <-ctx.Done():
					case <-time.After(time.Until(t0)):
					}
					if ctx.Err() != nil {
						break
					}
				}
				pairStart := t0
				// Only the ids: decoding whole requests would cost the
				// clients, who share the cores with the servers, more
				// than the servers spend answering.
				var list struct {
					Approvals []struct {
						ID string `json:"request_id"`
					} `json:"approvals"`
				}
				code, err := call(hc, "GET", base+"/api/approvals?status=pending&limit=50", tok, "", &list)
				if ctx.Err() != nil {
					break
				}
				ll = append(ll, time.Since(t0))
				if err != nil || code != 200 {
					failures.Add(1)
					continue
				}
				if len(list.Approvals) == 0 {
					empty.Add(1)
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
				pl = append(pl, time.Since(pairStart))
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
			pairLat = append(pairLat, pl...)
			mu.Unlock()
		})
	}
	wg.Wait()
	cpuServers, cpuSelf := cpuOf(pids...)-cpuServers0, cpuOf(os.Getpid())-cpuSelf0
	prodWG.Wait()
	streams.Wait()
	if prodErr != nil {
		return prodErr
	}

	// Check every acknowledged decision against the database, and every
	// decision in the database against the acknowledgements.
	var double, lost, mismatched int
	for id, ws := range wins {
		if len(ws) > 1 {
			double++
		}
		a, err := st.Get(ctx0, id)
		if err != nil || string(a.State) != ws[0].state || a.DecidedBy != ws[0].sup {
			mismatched++
		}
	}
	all, err := st.List(ctx0, store.Filter{})
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
	st.DB().QueryRow(`SELECT COUNT(*) FROM (SELECT request_id FROM audit WHERE event = 'approval' GROUP BY request_id HAVING COUNT(*) > 1) AS d`).Scan(&auditDup)
	rows, _, verr := st.VerifyAudit(ctx0)

	mode := "closed loop"
	if rate > 0 {
		mode = fmt.Sprintf("rate=%g pairs/s offered, %.0f/s done; list and pair from the scheduled start", rate, float64(len(pairLat))/dur.Seconds())
	}
	fmt.Printf("store=%s replicas=%d clients=%d duration=%s pending≈%d requests_created=%d (%s)\n", backend, replicas, clients, dur, pending, created.Load(), mode)
	fmt.Printf("list   n=%d %s\n", len(listLat), pct(listLat))
	fmt.Printf("decide n=%d %s\n", len(decideLat), pct(decideLat))
	fmt.Printf("pair   n=%d %s\n", len(pairLat), pct(pairLat))
	fmt.Printf("shown  n=%d %s (request stored → event on a server's stream)\n", len(shown), pct(shown))
	fmt.Printf("decisions won=%d (%.0f/s) conflicts(409)=%d failures=%d\n", len(wins), float64(len(wins))/dur.Seconds(), conflicts.Load(), failures.Load())
	// A list that found nothing pending is not followed by a decision:
	// the producer did not keep up, and such lists are cheaper than the
	// rest.
	fmt.Printf("empty lists=%d, pending at the end=%d\n", empty.Load(), len(all)-inDB)
	if n := len(listLat) + len(decideLat); n > 0 {
		fmt.Printf("cpu per request (list or decide): servers %.3f ms, bench process (clients and producer) %.3f ms\n",
			float64(cpuServers.Microseconds())/1000/float64(n), float64(cpuSelf.Microseconds())/1000/float64(n))
	}
	fmt.Printf("check: decided_in_db=%d double=%d lost=%d mismatched=%d audit_duplicates=%d audit_rows=%d audit_chain=%v\n",
		inDB, double, lost, mismatched, auditDup, rows, okOr(verr))
	if double+lost+mismatched+auditDup > 0 || verr != nil || failures.Load() > 0 || inDB != len(wins) {
		return fmt.Errorf("lost or double decisions")
	}
	return nil
}

// watchStream reads a server's event stream until ctx ends, calling seen
// with the id of each approval.requested event and when it arrived.
func watchStream(ctx context.Context, base, auth string, seen func(id string, at time.Time)) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/approvals/stream", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	requested := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "event: approval.requested":
			requested = true
		case strings.HasPrefix(line, "data: ") && requested:
			at := time.Now()
			var ev struct {
				Approval struct {
					ID string `json:"request_id"`
				} `json:"approval"`
			}
			if json.Unmarshal([]byte(line[6:]), &ev) == nil {
				seen(ev.Approval.ID, at)
			}
		case line == "":
			requested = false
		}
	}
}

// cpuOf is the CPU time (user + system) the processes have used, from
// /proc/PID/stat (clock ticks of 10 ms: USER_HZ is 100 on Linux).
func cpuOf(pids ...int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: count the
		// fields after it (utime and stime are the 14th and 15th).
		_, rest, _ := strings.Cut(string(data), ") ")
		f := strings.Fields(rest)
		if len(f) > 12 {
			var u, st int64
			fmt.Sscan(f[11], &u)
			fmt.Sscan(f[12], &st)
			ticks += u + st
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
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
