package shellpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/wardenhq/warden/internal/testenv"
)

// The differential oracle: every corpus line runs under real bash, dash
// and zsh, and what each shell executes is compared with what the judge
// listed for that shell's reading. External commands are shims (a PATH of
// scripts that log their argv, NUL-separated, and exit 0); builtins are
// seen through xtrace. Everything runs inside bubblewrap (no network, a
// read-only root, a pid namespace, an unprivileged user, no disks in
// /dev): the attack rows are run too.

const oracleMarker = "+|O| "

// oracleRun is what one shell did with one line.
type oracleRun struct {
	Shell   string     `json:"shell"`
	Line    string     `json:"line"`
	Execs   [][]string `json:"execs"`  // argv of each external command (shims)
	Traced  []string   `json:"traced"` // names of the commands xtrace showed
	WS      string     `json:"ws"`
	Home    string     `json:"home"`
	Timeout bool       `json:"timeout"`
}

// oracleShells are the shells the oracle runs and how it turns on xtrace.
var oracleShells = []string{"bash", "dash", "zsh"}

// shimNames are the external commands the oracle's PATH provides.
var shimNames = strings.Fields(`ls cat head tail wc grep egrep fgrep rg fd find tree pwd echo printf which type whoami id date uname hostname
file stat du df diff cmp sort uniq cut tr jq basename dirname realpath readlink true false test [ printenv column nl od hexdump xxd
sha256sum sha1sum md5sum seq sleep tac rev paste join comm fold expand strings ps free uptime nproc locale man sed awk gawk mawk base64
git go pip pip3 npm cargo node python python3 perl ruby php lua kubectl docker make gcc touch mkdir rm rmdir mv cp ln chmod chown chgrp
curl wget nc ssh rsync scp dd mkfs mkfs.ext4 mke2fs mkswap fdisk wipefs shutdown reboot halt poweroff init systemctl kill pkill killall
killall5 sudo su doas pkexec env nice nohup timeout stdbuf setsid xargs strace chroot unshare watch flock busybox toybox tee shred
truncate install sh bash dash zsh ksh mksh fish csh tcsh script ed ex vim gdb parallel at batch crontab base32 gzip zcat openssl
less more look fdfind systemd-run machinectl gosu python3.11 sqlite3 m4 dc tar unzip rustc tsc gofmt golangci-lint pytest mypy ruff
npx yarn pnpm cc clang gawk nawk setfacl cryptsetup rsync aria2c scp telnet dig`)

func writeShims(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range shimNames {
		// argc, then each argument, NUL-terminated.
		s := "#!/bin/dash\nprintf '%s\\0' $(($# + 1)) " + shellQuote(n) + " \"$@\" >> \"$WARDEN_ORACLE_LOG\"\n"
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// killFn stands in for the kill builtin: a function that logs like a shim.
const killFn = `kill() { set +x; printf '%s\0' $(($# + 1)) kill "$@" >> "$WARDEN_ORACLE_LOG"; set -x; }` + "\n"

// prepareRuns makes each run's directory before the jail starts, owned by
// the caller (root), with only its workspace, home, shim log and trace
// writable by the jail's user: a line that deletes everything it can
// (/bin/rm -rf /, real rm) cannot delete another run's log or the shims.
func prepareRuns(work string, n int, shells []string, chown bool) error {
	for i := 0; i < n; i++ {
		for _, sh := range shells {
			dir := filepath.Join(work, "run", strconv.Itoa(i)+"-"+sh)
			for _, d := range []string{filepath.Join(dir, "ws"), filepath.Join(dir, "home")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
			}
			for _, f := range []string{"shims.log", "trace"} {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					return err
				}
			}
			prelude := killFn + "exec 199>>" + shellQuote(filepath.Join(dir, "trace")) + "\nBASH_XTRACEFD=199\nset -x\n"
			if err := os.WriteFile(filepath.Join(dir, "prelude"), []byte(prelude), 0o644); err != nil {
				return err
			}
			if chown {
				for _, p := range []string{"ws", "home", "shims.log", "trace"} {
					if err := os.Chown(filepath.Join(dir, p), nobody, nobody); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// oracleDriver runs inside the jail: every line under every shell, each in
// its own directory, and writes what happened as JSON lines.
func oracleDriver(linesPath string, out io.Writer, bin string) error {
	b, err := os.ReadFile(linesPath)
	if err != nil {
		return err
	}
	var lines []string
	if err := json.Unmarshal(b, &lines); err != nil {
		return err
	}
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	base := filepath.Dir(linesPath)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	shells := strings.Fields(os.Getenv("WARDEN_ORACLE_SHELLS"))
	for i, line := range lines {
		for _, sh := range shells {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				r, err := runShell(sh, line, filepath.Join(base, "run", strconv.Itoa(i)+"-"+sh), bin)
				if err != nil {
					r = oracleRun{Shell: sh, Line: line}
				}
				mu.Lock()
				enc.Encode(r)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return nil
}

// runShell runs one line under one shell, in a fresh workspace with a few
// files, and collects the shims' log and the xtrace output.
func runShell(sh, line, dir, bin string) (oracleRun, error) {
	r := oracleRun{Shell: sh, Line: line}
	ws := filepath.Join(dir, "ws")
	home := filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(ws, "src"), filepath.Join(ws, "docs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return r, err
		}
	}
	for _, f := range []string{"f", "a", "b", "go.mod", "f.json", "README.md", "main.go", "src/a.go", "list.txt"} {
		os.WriteFile(filepath.Join(ws, f), []byte("x\n"), 0o644)
	}
	log := filepath.Join(dir, "shims.log")
	trace := filepath.Join(dir, "trace")
	env := []string{"PATH=" + bin, "HOME=" + home, "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=" + home, "USER=oracle",
		"WARDEN_ORACLE_LOG=" + log, "PS4=" + oracleMarker}
	var cmd *exec.Cmd
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	switch sh {
	case "bash":
		prelude := filepath.Join(dir, "prelude")
		cmd = exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", line)
		cmd.Args[0] = "bash" // as warden's runner starts it: $0 is "bash"
		env = append(env, "BASH_ENV="+prelude)
	case "dash":
		cmd = exec.CommandContext(ctx, "/bin/dash", "-c", killFn+"set -x\n"+line)
		cmd.Args[0] = "sh"
	case "zsh":
		cmd = exec.CommandContext(ctx, "/bin/zsh", "-f", "-c", killFn+"set -x\n"+line)
	}
	cmd.Env = env
	cmd.Dir = ws
	cmd.Stdin = nil
	var stderr bytes.Buffer
	cmd.Stdout = nil
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	r.Timeout = ctx.Err() != nil
	if cmd.Process != nil {
		// Background jobs the line started: let them finish, then stop them.
		for k := 0; k < 20 && syscall.Kill(-cmd.Process.Pid, 0) == nil; k++ {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = err
	tr := stderr.String()
	if sh == "bash" {
		b, err := os.ReadFile(trace)
		if err != nil {
			return r, err
		}
		tr = string(b)
	}
	r.Traced = traceNames(sh, tr)
	r.Execs = readShimLog(log)
	r.WS, r.Home = ws, home
	return r, nil
}

var markerRE = regexp.MustCompile(`\+*\|O\| `)

// traceNames extracts the command names xtrace printed (assignments,
// [[ ]] and (( )) left out).
func traceNames(sh, tr string) []string {
	var out []string
	locs := markerRE.FindAllStringIndex(tr, -1)
	for k, l := range locs {
		end := len(tr)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		seg := tr[l[1]:end]
		if nl := strings.IndexByte(seg, '\n'); nl >= 0 {
			seg = seg[:nl]
		}
		var words []string
		if sh == "dash" {
			// dash does not quote what it traces: a segment that starts
			// with an assignment cannot be split reliably.
			words = strings.Fields(seg)
			if len(words) > 0 && assignRE.MatchString(words[0]) {
				continue
			}
		} else {
			for w, err := range syntax.NewParser().WordsSeq(strings.NewReader(seg)) {
				if err != nil {
					break
				}
				fs, err := expand.Fields(&expand.Config{}, ctrlEscapes(w)) // nil shares one global Config between goroutines
				if err != nil || len(fs) != 1 {
					fs = []string{w.Lit()}
				}
				words = append(words, fs[0])
			}
		}
		// bash and zsh trace each assignment as its own entry: an entry
		// that is one assignment word is not a command; a longer one
		// starting with NAME= is a command so named ('A=' 0).
		if len(words) == 1 && assignRE.MatchString(words[0]) {
			continue
		}
		if len(words) == 0 || words[0] == "[[" || words[0] == "((" || strings.HasPrefix(words[0], "((") {
			continue
		}
		out = append(out, words[0])
	}
	return out
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)

func readShimLog(p string) [][]string {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	fields := strings.Split(string(b), "\x00")
	var out [][]string
	for i := 0; i < len(fields); {
		n, err := strconv.Atoi(fields[i])
		if err != nil || i+1+n > len(fields) {
			break
		}
		out = append(out, fields[i+1:i+1+n])
		i += 1 + n
	}
	return out
}

// oracleLines are the corpus lines the oracle runs: every row except those
// that would exhaust the machine (fork bombs, endless loops).
func oracleLines(t testing.TB) []string {
	var lines []string
	seen := map[string]bool{}
	skip := regexp.MustCompile(`fork|while true|while :|until false|:\(\)|f\(\)\{ f|;f$|yes |/dev/zero|sleep [0-9]{2}|/bin/kill`)
	for _, name := range []string{"testdata/attacks.jsonl", "testdata/benign.jsonl", "testdata/oracle.jsonl"} {
		for _, r := range readCorpus(t, name) {
			if r.Rule == RuleForkBomb || skip.MatchString(r.Cmd) || seen[r.Cmd] || strings.IndexByte(r.Cmd, 0) >= 0 {
				continue
			}
			seen[r.Cmd] = true
			lines = append(lines, r.Cmd)
		}
	}
	return lines
}

// oracleEnv is a directory with the shims and a copy of the test binary
// that nobody can run inside bubblewrap.
type oracleEnv struct {
	dir, bin, exe, bwrap string
	n                    int
	mu                   sync.Mutex
}

func newOracleEnv(t testing.TB, dir string) *oracleEnv {
	t.Helper()
	paths := testenv.Need(t, "bash", "dash", "zsh", "bwrap")
	e := &oracleEnv{dir: dir, bin: filepath.Join(dir, "bin"), exe: filepath.Join(dir, "oracle.test"), bwrap: paths[3]}
	writeShims(t, e.bin)
	if err := copyFile(e.exe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := reachable(dir); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs lines under shells in the jail and returns what each did.
func (e *oracleEnv) run(lines, shells []string) ([]oracleRun, error) {
	e.mu.Lock()
	e.n++
	work := filepath.Join(e.dir, "w"+strconv.Itoa(e.n))
	e.mu.Unlock()
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	if err := prepareRuns(work, len(lines), shells, os.Getuid() == 0); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(lines)
	linesPath := filepath.Join(work, "lines.json")
	if err := os.WriteFile(linesPath, b, 0o644); err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	// bwrap runs as nobody: no file of root's is writable, no disk device
	// is reachable, and in its user namespace's procfs there is no
	// sysrq-trigger. The pid namespace keeps kill -1 inside.
	cmd := exec.Command(e.bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run",
		"--bind", work, work, "--chdir", work, "--", e.exe)
	cmd.Env = []string{"WARDEN_ORACLE_DRIVER=" + linesPath, "WARDEN_ORACLE_BIN=" + e.bin,
		"WARDEN_ORACLE_SHELLS=" + strings.Join(shells, " "), "PATH=/usr/bin:/bin"}
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	f, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("oracle driver in bwrap: %v\n%s", err, stderr.Bytes())
	}
	var runs []oracleRun
	for _, l := range bytes.Split(f, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r oracleRun
		if err := json.Unmarshal(l, &r); err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

const nobody = 65534

// copyFile copies the running test binary to dst.
func copyFile(dst string, mode os.FileMode) error {
	src, err := os.Executable()
	if err != nil {
		return err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// reachable lets other users (the jail's) reach dir through its parents.
func reachable(dir string) error {
	for p := dir; p != "/" && p != "."; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(p, st.Mode().Perm()|0o055); err != nil {
				return err
			}
		}
	}
	return nil
}

// judgedFor is what the judge listed for one shell's reading of a line:
// bash reads the line itself; dash and zsh the string of sh -c and zsh -c.
func judgedFor(sh, line string) (*Verdict, []judgedRun) {
	opts := &Options{EnvKnown: []string{"WARDEN_ORACLE_LOG", "PS4"}}
	switch sh {
	case "bash":
		v := Judge(line, opts)
		return v, v.runs
	case "dash":
		v := Judge("sh -c "+shellQuote(line), opts)
		var rs []judgedRun
		for _, r := range v.runs {
			if r.depth >= 1 && r.dialect == "dash" {
				rs = append(rs, r)
			}
		}
		return v, rs
	}
	v := Judge("zsh -c "+shellQuote(line), opts)
	var rs []judgedRun
	for _, r := range v.runs {
		if r.depth >= 1 {
			rs = append(rs, r)
		}
	}
	return v, rs
}

// mismatches lists what a shell ran that the judge did not list.
func mismatches(r oracleRun, runs []judgedRun) []string {
	var out []string
	for _, e := range r.Execs {
		argv := make([]string, len(e))
		for k, a := range e {
			argv[k] = normalize(r, a)
		}
		if !anyRunMatches(argv, runs) {
			out = append(out, fmt.Sprintf("ran %q, which the judge did not list", argv))
		}
	}
	for _, n := range r.Traced {
		n = normalize(r, n)
		if ignoredTrace[n] || slices.Contains(shimNames, n) {
			continue // externals are checked through the shims' log
		}
		if r.Shell == "dash" && !dashBuiltins[n] {
			continue // dash's traces from a pipeline's processes interleave
		}
		found := false
		for _, j := range runs {
			if j.anything || len(j.argv) > 0 && (wordMatches(j.argv[0], n, j.glob[0]) || baseName(j.argv[0]) == n) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, fmt.Sprintf("ran %q (xtrace), which the judge did not list", n))
		}
	}
	sort.Strings(out)
	return out
}

// normalize maps what a shell really used to what the judge stands for it
// with: the workspace ($PWD, wsRoot) and its parents, HOME (~), the
// descriptor paths of process substitutions, and the CR bash keeps before a
// CR LF (the judge calls such a line dangerous).
func normalize(r oracleRun, s string) string {
	s = strings.TrimSuffix(s, "\r")
	s = fdPath.ReplaceAllString(s, "/dev/fd/63")
	s = strings.ReplaceAll(s, r.WS, wsRoot)
	s = strings.ReplaceAll(s, r.Home, "~")
	for up, d := 1, filepath.Dir(r.WS); up <= 3 && d != "/"; up, d = up+1, filepath.Dir(d) {
		if s == d {
			return strings.Join(strings.Split(wsRoot, "/")[:5-up], "/")
		}
	}
	return s
}

var dashBuiltins = map[string]bool{}

func init() {
	for _, b := range strings.Fields("alias bg break cd chdir command continue echo eval exec exit export false fc fg getopts hash jobs kill local printf pwd read readonly return set shift test times trap true type ulimit umask unalias unset wait [ . :") {
		dashBuiltins[b] = true
	}
}

var fdPath = regexp.MustCompile(`/dev/fd/[0-9]+`)

// ignoredTrace are trace entries that are not commands the judge lists.
var ignoredTrace = map[string]bool{"set": true, "setopt": true, "]]": true, "function": true, "for": true, "case": true, "select": true, "until": true, "while": true, "if": true}

func anyRunMatches(argv []string, runs []judgedRun) bool {
	for _, j := range runs {
		if argvMatches(j, argv) {
			return true
		}
	}
	return false
}

// argvMatches reports whether a judged argv matches an executed one: a
// hole stands for any text, and a word with glob characters for the one or
// more words the shell expanded it to.
func argvMatches(j judgedRun, ran []string) bool {
	if j.anything {
		return true
	}
	var match func(k, i int) bool
	match = func(k, i int) bool {
		if k == len(j.argv) {
			return i == len(ran)
		}
		if j.glob[k] && j.argv[k] == hole && match(k+1, i) {
			return true // an unknown word that may be several may be none
		}
		if i == len(ran) {
			return false
		}
		if !j.glob[k] {
			return (wordMatches(j.argv[k], ran[i], false) || k == 0 && baseName(j.argv[k]) == ran[i]) && match(k+1, i+1)
		}
		for e := i + 1; e <= len(ran); e++ {
			if !wordMatches(j.argv[k], ran[e-1], true) {
				break
			}
			if match(k+1, e) {
				return true
			}
		}
		return false
	}
	return match(0, 0)
}

// wordMatches matches one judged word against one executed word.
func wordMatches(judged, ran string, glob bool) bool {
	if judged == ran || judged == hole {
		return true // a hole alone is any text, slashes included
	}
	if !glob && !hasHole(judged) {
		return false
	}
	if glob {
		g := strings.NewReplacer(hole, "*", numHole, "*").Replace(judged)
		if ok, _ := filepath.Match(g, ran); ok {
			return true
		}
		if ok, _ := filepath.Match(g, strings.TrimPrefix(ran, "./")); ok {
			return true
		}
		return false
	}
	pat := regexp.QuoteMeta(judged)
	pat = strings.NewReplacer(regexp.QuoteMeta(hole), ".*", regexp.QuoteMeta(numHole), "-?[0-9]*").Replace(pat)
	ok, _ := regexp.MatchString("^(?s:"+pat+")$", ran)
	return ok
}

// TestShellOracle runs the corpora under bash, dash and zsh and checks
// that every command each shell executes is one the judge listed for that
// shell's reading. zsh's reading is best effort: where zsh runs what the
// judge did not list, the judge must not call zsh -c LINE safe.
func TestShellOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every corpus line under three shells")
	}
	lines := oracleLines(t)
	runs, err := newOracleEnv(t, t.TempDir()).run(lines, oracleShells)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(lines)*len(oracleShells) {
		t.Fatalf("oracle ran %d line×shell pairs, want %d", len(runs), len(lines)*len(oracleShells))
	}
	zshDiffer, timedOut := 0, 0
	checked := map[string]int{}
	for _, r := range runs {
		v, judged := judgedFor(r.Shell, r.Line)
		if r.Shell == "bash" && v.ParseError != "" {
			continue // refused: warden does not run it
		}
		if len(r.Execs) == 0 && len(r.Traced) == 0 {
			continue
		}
		if r.Timeout {
			// A loop over shims that always succeed: what the kill cut
			// short cannot be read reliably.
			timedOut++
			continue
		}
		checked[r.Shell]++
		ms := mismatches(r, judged)
		if len(ms) == 0 {
			continue
		}
		if r.Shell == "zsh" {
			zshDiffer++
			t.Logf("zsh -c %q: %s", r.Line, strings.Join(ms, "; "))
			if !v.Blocked && v.Class == Safe {
				t.Errorf("zsh ran what the judge did not list, yet zsh -c %q is safe: %s", r.Line, strings.Join(ms, "; "))
			}
			continue
		}
		t.Errorf("%s -c %q: %s\n%s", r.Shell, r.Line, strings.Join(ms, "; "), dump(v))
	}
	t.Logf("lines %d; compared bash %d, dash %d, zsh %d (%d runs timed out); zsh ran commands the judge's reading did not list on %d lines (never safe)",
		len(lines), checked["bash"], checked["dash"], checked["zsh"], timedOut, zshDiffer)
	for _, sh := range oracleShells {
		if checked[sh] < len(lines)/2 {
			t.Errorf("only %d of %d lines ran commands under %s: the oracle is not seeing them", checked[sh], len(lines), sh)
		}
	}
}

// TestMain turns the test binary into the oracle's driver when asked.
func TestMain(m *testing.M) {
	if p := os.Getenv("WARDEN_ORACLE_DRIVER"); p != "" {
		if err := oracleDriver(p, os.Stdout, os.Getenv("WARDEN_ORACLE_BIN")); err != nil {
			fmt.Fprintln(os.Stderr, "oracle driver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
