// Command promptbudget counts the calls a person would be asked about in
// each confirmation mode, over the recorded sessions in
// bench/prompt-budget/*.jsonl: every call goes through warden's real
// engine (app.New: the judge, the guards, the policy, [[rules]], the auto
// mode's check of a real bubblewrap jail) with Decide, which asks nobody
// and runs nothing. A call the engine would put to a person is one prompt;
// in a jail with network = "allowlist", each host a session's commands
// reach that [sandbox.egress] does not allow is one more (asked once per
// host and session: a person's answer is remembered for the session).
//
// Run it with bench/prompt-budget.sh. It doubles as `warden worker` for
// the jails it starts.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress/policy"
	"github.com/wardenhq/warden/internal/engine"
	"github.com/wardenhq/warden/internal/sandbox/jailworker"
)

// call is one recorded tool call; Hosts are the hosts it reaches from
// inside the jail (package registries, git remotes, APIs).
type call struct {
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
	Hosts []string        `json:"hosts,omitempty"`
}

type session struct {
	name  string
	files []string // workspace files the session's calls name
	calls []call
}

// registries are the package registries a user allows in
// [sandbox.egress] for the "registries allowed" mode.
var registries = []string{
	"registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "proxy.golang.org", "sum.golang.org",
	"crates.io", "static.crates.io", "index.crates.io", "rubygems.org", "repo.maven.apache.org",
}

type mode struct {
	name    string
	confirm string
	sandbox *config.Sandbox // nil: no jail
	rules   []config.Rule
}

// devRules are [[rules]] a user might write for the build, test and commit
// commands of their projects (prefix rules, allow).
func devRules() []config.Rule {
	var out []config.Rule
	for _, words := range [][]string{
		{"go", "build"}, {"go", "test"}, {"go", "vet"}, {"gofmt", "-l"}, {"npm", "test"}, {"npm", "run", "lint"}, {"npm", "run", "build"},
		{"pnpm", "-r"}, {"cargo", "build"}, {"cargo", "test"}, {"cargo", "clippy"}, {"cargo", "fmt"},
		{"uv", "run", "pytest"}, {".venv/bin/python", "-m", "pytest"}, {"ruff", "check"}, {"make", "test"},
		{"git", "add"}, {"git", "commit"},
	} {
		out = append(out, config.Rule{Command: words, Decision: "allow", File: "bench", Line: len(out) + 1})
	}
	return out
}

func modes() []mode {
	jail := func(net config.NetworkMode, allow []string) *config.Sandbox {
		return &config.Sandbox{Enabled: true, Backend: "local", Landlock: "auto", IdleTimeout: 600,
			NetworkMode: net, Egress: config.Egress{Allow: allow, Unknown: policy.UnknownAsk}}
	}
	return []mode{
		{"confirm-sensitive, no jail", config.ModeConfirmSensitive, nil, nil},
		{"confirm-sensitive, no jail, 18 [[rules]] for build/test/commit", config.ModeConfirmSensitive, nil, devRules()},
		{"confirm-sensitive, jail (allowlist, registries allowed)", config.ModeConfirmSensitive, jail(config.NetworkAllowlist, registries), nil},
		{"auto, no jail (= confirm-sensitive)", config.ModeAuto, nil, nil},
		{"auto, jail (allowlist, nothing allowed)", config.ModeAuto, jail(config.NetworkAllowlist, nil), nil},
		{"auto, jail (allowlist, registries allowed)", config.ModeAuto, jail(config.NetworkAllowlist, registries), nil},
	}
}

func main() {
	if len(os.Args) > 3 && os.Args[1] == "worker" && os.Args[2] == "--spec" {
		if err := jailworker.Serve(context.Background(), os.Args[3], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir := flag.String("corpus", "bench/prompt-budget", "directory of *.jsonl sessions")
	verbose := flag.Bool("v", false, "list every prompt")
	flag.Parse()
	sessions, err := load(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "promptbudget:", err)
		os.Exit(1)
	}
	total := 0
	for _, s := range sessions {
		total += len(s.calls)
	}
	fmt.Printf("corpus: %d sessions, %d tool calls\n\n", len(sessions), total)
	fmt.Printf("%-62s %8s %8s %8s %8s\n", "mode", "engine", "egress", "prompts", "vs base")
	var base int
	for i, m := range modes() {
		eng, egr, lines, err := count(m, sessions)
		if err != nil {
			fmt.Fprintf(os.Stderr, "promptbudget: %s: %v\n", m.name, err)
			os.Exit(1)
		}
		n := eng + egr
		if i == 0 {
			base = n
		}
		fmt.Printf("%-62s %8d %8d %8d %7.0f%%\n", m.name, eng, egr, n, 100*float64(n)/float64(base))
		if *verbose {
			for _, l := range lines {
				fmt.Println("    " + l)
			}
		}
	}
}

func load(dir string) ([]session, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no sessions in %s", dir)
	}
	sort.Strings(paths)
	var out []session
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		s := session{name: strings.TrimSuffix(filepath.Base(p), ".jsonl")}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			var c call
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s:%d: %w", p, n, err)
			}
			var a struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(c.Args, &a)
			if a.Path != "" && (c.Tool == "read_file" || c.Tool == "edit_file" || c.Tool == "delete_file") {
				s.files = append(s.files, a.Path)
			}
			s.calls = append(s.calls, c)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// count decides every call of every session in mode m, each session in a
// fresh workspace (its files present) with its own engine and jail.
func count(m mode, sessions []session) (engineAsks, egressAsks int, lines []string, err error) {
	tmp, err := os.MkdirTemp("", "promptbudget-")
	if err != nil {
		return 0, 0, nil, err
	}
	defer os.RemoveAll(tmp)
	for _, s := range sessions {
		ws := filepath.Join(tmp, s.name)
		for _, f := range s.files {
			p := filepath.Join(ws, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return 0, 0, nil, err
			}
			if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
				return 0, 0, nil, err
			}
		}
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return 0, 0, nil, err
		}
		cfg := config.Default()
		cfg.Security.ConfirmMode = m.confirm
		cfg.Rules = m.rules
		var pol *policy.Policy
		if m.sandbox != nil {
			sb := *m.sandbox
			cfg.Sandbox = &sb
			if sb.NetworkMode == config.NetworkAllowlist {
				if pol, err = sb.Egress.Policy(); err != nil {
					return 0, 0, nil, err
				}
			}
		}
		a, err := app.New(context.Background(), app.Options{Config: cfg, Flags: app.Flags{Workspace: ws},
			DB: filepath.Join(tmp, s.name+".db"), StateDir: filepath.Join(tmp, s.name+".state"),
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return 0, 0, nil, err
		}
		asked := map[string]bool{}
		for _, c := range s.calls {
			d := a.Engine().Decide(context.Background(), c.Tool, c.Args)
			switch d.Decision {
			case engine.Ask:
				engineAsks++
				lines = append(lines, fmt.Sprintf("%s: ask   %s %s  (%s)", s.name, c.Tool, c.Args, d.Rule))
			case engine.Deny:
				lines = append(lines, fmt.Sprintf("%s: deny  %s %s  (%s)", s.name, c.Tool, c.Args, d.Rule))
				continue
			}
			if pol == nil {
				continue
			}
			for _, h := range c.Hosts {
				t, err := policy.ParseTarget(h + ":443")
				if err != nil {
					return 0, 0, nil, err
				}
				if pol.Decide(t).Verdict == policy.Ask && !asked[h] {
					asked[h] = true
					egressAsks++
					lines = append(lines, fmt.Sprintf("%s: egress %s (from %s)", s.name, h, c.Args))
				}
			}
		}
		if err := a.Close(); err != nil {
			return 0, 0, nil, err
		}
	}
	return engineAsks, egressAsks, lines, nil
}
