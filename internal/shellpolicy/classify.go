package shellpolicy

import (
	"path"
	"strings"
)

// safeList and devList are the built-in classification, as word sequences
// matched against argv (never string prefixes: lsblk is not ls). A trailing
// "$" means the argv must end there. They start from seed 000's
// SAFE_COMMANDS and DEV_PREFIXES.
var safeList = []string{
	"ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "fd", "fdfind", "find", "tree",
	"pwd", "echo", "printf", "which", "type", "whoami", "id", "date", "uname", "hostname", "file",
	"stat", "du", "df", "diff", "cmp", "sort", "uniq", "cut", "tr", "jq", "basename", "dirname",
	"realpath", "readlink", "true", "false", "test", "[", "printenv", "column", "nl", "od", "hexdump",
	"xxd", "sha256sum", "sha1sum", "sha512sum", "md5sum", "cksum", "b2sum", "seq", "sleep", "tac",
	"rev", "paste", "join", "comm", "fold", "expand", "unexpand", "strings", "cd", "ps", "free",
	"uptime", "nproc", "locale", "man", "alias", "sed", "awk", "gawk", "mawk", "nawk", "base64", "look",
	":", "wait", "set", "shift", "exit", "return", "break", "continue", "local", "unset", "getopts", "read",
	"git status", "git log", "git diff", "git show", "git rev-parse", "git ls-files", "git blame",
	"git describe", "git shortlog", "git grep", "git cat-file", "git ls-tree", "git rev-list",
	"git branch $", "git branch --show-current $", "git branch -a $", "git branch --all $", "git branch -r $",
	"git branch -v $", "git branch -vv $", "git branch --list", "git tag $", "git tag -l", "git tag --list",
	"git remote $", "git remote -v $", "git stash list", "git config --get", "git config --list",
	"git config -l", "git version", "git --version", "git merge-base", "git name-rev", "git count-objects",
	"go version", "go env", "go list", "go doc",
	"pip list", "pip show", "pip freeze", "pip3 list", "pip3 show", "pip3 freeze",
	"npm ls", "npm list", "cargo --version", "rustc --version", "node --version", "python --version",
	"python3 --version", "kubectl get", "kubectl describe", "docker ps", "docker images",
}

var devList = []string{
	"make", "cmake", "ninja", "meson", "mkdir", "touch",
	"go build", "go test", "go vet", "go fmt", "go mod", "go run", "go generate", "go install", "go get",
	"go work", "go clean", "go tool", "gofmt", "goimports", "golangci-lint", "staticcheck", "govulncheck",
	"pytest", "python -m pytest", "python3 -m pytest", "python -m unittest", "python3 -m unittest",
	"mypy", "ruff", "black", "isort", "flake8", "pylint", "tox", "nox",
	"pip install", "pip3 install", "uv sync", "uv run", "uv pip", "poetry install", "poetry run",
	"cargo build", "cargo test", "cargo check", "cargo clippy", "cargo fmt", "cargo run", "cargo bench",
	"cargo doc", "rustfmt", "npm test", "npm run", "npm install", "npm ci", "npm start", "npm build",
	"yarn test", "yarn build", "yarn install", "yarn run", "yarn lint", "pnpm test", "pnpm build",
	"pnpm install", "pnpm run", "tsc", "eslint", "prettier", "jest", "vitest", "mvn", "gradle",
	"javac", "gcc", "g++", "cc", "clang", "clang++", "rustc", "dotnet build", "dotnet test", "rake", "rspec",
	"git add", "git commit", "git switch", "git checkout", "git restore", "git stash", "git fetch",
	"git pull", "git merge", "git rebase", "git init", "git mv", "git rm", "git cherry-pick",
}

type entry struct {
	words []string
	exact bool
	class Class
}

type tables struct {
	user map[string][]entry
}

var builtin = func() map[string][]entry {
	m := map[string][]entry{}
	addEntries(m, safeList, Safe)
	addEntries(m, devList, Dev)
	return m
}()

func addEntries(m map[string][]entry, list []string, c Class) {
	for _, s := range list {
		w := strings.Fields(s)
		if len(w) == 0 {
			continue
		}
		e := entry{words: w, class: c}
		if w[len(w)-1] == "$" {
			e.words, e.exact = w[:len(w)-1], true
		}
		if len(e.words) == 0 {
			continue
		}
		m[e.words[0]] = append(m[e.words[0]], e)
	}
}

func newTables(o *Options) *tables {
	t := &tables{}
	if len(o.SafeCommands)+len(o.DevCommands) > 0 {
		t.user = map[string][]entry{}
		addEntries(t.user, o.SafeCommands, Safe)
		addEntries(t.user, o.DevCommands, Dev)
	}
	return t
}

// match finds the longest entry whose words start argv (user entries win ties).
func (t *tables) match(words []string) (entry, bool) {
	var best entry
	found := false
	try := func(es []entry) {
		for _, e := range es {
			if len(e.words) > len(words) || e.exact && len(e.words) != len(words) {
				continue
			}
			ok := true
			for k, w := range e.words {
				if words[k] != w {
					ok = false
					break
				}
			}
			if ok && (!found || len(e.words) >= len(best.words)) {
				best, found = e, true
			}
		}
	}
	try(builtin[words[0]])
	if t.user != nil {
		try(t.user[words[0]])
	}
	return best, found
}

// gitGlobal strips git's global options; it returns the remaining argv and
// why a global option makes the command dangerous ("" if none does).
func gitGlobal(argv []arg) ([]arg, string) {
	out := []arg{argv[0]}
	why := ""
	k := 1
	for ; k < len(argv); k++ {
		v := argv[k].val
		if argv[k].computed || !strings.HasPrefix(v, "-") {
			break
		}
		switch {
		case v == "-C" || v == "--namespace":
			k++
		case v == "--no-pager" || v == "--bare" || v == "--no-optional-locks" || v == "--literal-pathspecs" ||
			v == "--no-replace-objects" || v == "--glob-pathspecs" || v == "--noglob-pathspecs" || v == "--icase-pathspecs" ||
			v == "--version" || v == "--help" || strings.HasPrefix(v, "--namespace="):
			if v == "--version" || v == "--help" {
				out = append(out, argv[k])
			}
		case v == "-c" || v == "--config-env" || strings.HasPrefix(v, "--config-env="):
			why = "git " + v + " sets configuration that can run commands"
			if !strings.Contains(v, "=") {
				k++
			}
		case v == "--git-dir" || v == "--work-tree" || strings.HasPrefix(v, "--git-dir=") || strings.HasPrefix(v, "--work-tree="):
			why = "git " + v + " points at a repository whose configuration can run commands"
			if !strings.Contains(v, "=") {
				k++
			}
		case strings.HasPrefix(v, "--exec-path="):
			why = "git --exec-path runs git commands from another directory"
		case v == "-p" || v == "--paginate":
			why = "git " + v + " runs a pager"
		default:
			why = "unknown git option " + v
		}
	}
	return append(out, argv[min(k, len(argv)):]...), why
}

// classify gives the class of one unwrapped argv.
func (j *judge) classify(base string, argv []arg) (Class, string) {
	if base == "cd" || base == "pushd" || base == "popd" {
		j.trackCd(base, argv[1:])
	}
	if base == "git" {
		var why string
		argv, why = gitGlobal(argv)
		if why != "" {
			return Dangerous, why
		}
	}
	words := make([]string, 0, len(argv))
	words = append(words, base)
	for _, a := range argv[1:] {
		if a.computed {
			words = append(words, "\x00")
		} else {
			words = append(words, a.val)
		}
	}
	e, ok := j.tables.match(words)
	if !ok {
		return Dangerous, "not a known safe or dev command: " + base
	}
	name := strings.Join(e.words, " ")
	if why := dangerousArgs(base, argv); why != "" {
		return Dangerous, why
	}
	if e.class == Safe {
		if why := j.outside(base, argv); why != "" {
			return Dangerous, why
		}
		return Safe, "known safe command: " + name
	}
	return e.class, "known dev command: " + name
}

func (j *judge) trackCd(base string, args []arg) {
	var target *arg
	for k := range args {
		if args[k].computed || !strings.HasPrefix(args[k].val, "-") || args[k].val == "-" {
			target = &args[k]
			break
		}
	}
	switch {
	case base == "popd":
		j.cwd = "?"
	case target == nil:
		j.cwd = "~"
	case target.computed || target.val == "-":
		j.cwd = "?"
	case strings.HasPrefix(target.val, "/") || strings.HasPrefix(target.val, "~"):
		j.cwd = path.Clean(target.val)
	case j.cwd == "":
		if c := path.Clean(target.val); c == ".." || strings.HasPrefix(c, "../") {
			j.cwd = "?"
		}
	case j.cwd != "?":
		j.cwd = path.Join(j.cwd, target.val)
	}
}

// dangerousArgs says why arguments make a known command dangerous.
func dangerousArgs(base string, argv []arg) string {
	args := argv[1:]
	for k, a := range args {
		v := a.val
		name, _, hasEq := strings.Cut(v, "=")
		switch base {
		case "find":
			switch v {
			case "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls":
				return "find " + v + " deletes, writes or runs commands"
			}
		case "rg":
			if name == "--pre" || name == "--hostname-bin" {
				return "rg " + name + " runs a program"
			}
		case "fd", "fdfind":
			if name == "-x" || name == "--exec" || name == "-X" || name == "--exec-batch" {
				return base + " " + name + " runs a program"
			}
		case "git":
			switch {
			case name == "--output" || v == "-o" && k > 0 && args[0].val == "archive":
				return "git " + name + " writes a file"
			case name == "--ext-diff" || name == "-O" || strings.HasPrefix(v, "-O") && args[0].val == "grep" ||
				name == "--open-files-in-pager" || name == "--upload-pack" || name == "--receive-pack" || name == "--exec" || name == "--textconv":
				return "git " + name + " runs a program"
			case name == "-d" || name == "-D" || name == "--delete" || name == "-m" || name == "-M" || name == "-f" || name == "--force":
				if args[0].val == "branch" || args[0].val == "tag" {
					return "git " + args[0].val + " " + name + " changes refs"
				}
			}
		case "sed":
			if v == "--in-place" || hasEq && name == "--in-place" || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && shortHas(v, 'i', "ef") {
				return "sed -i edits files in place"
			}
			if name == "-f" || name == "--file" || strings.HasPrefix(v, "-f") && !strings.HasPrefix(v, "--") {
				return "sed runs a script from a file"
			}
		case "awk", "gawk", "mawk", "nawk":
			if v == "-f" || name == "--file" || v == "-E" || name == "--exec" || v == "-l" || name == "--load" || strings.HasPrefix(v, "-f") && !strings.HasPrefix(v, "--") {
				return base + " runs a program from a file or loads an extension"
			}
		case "sort":
			if name == "--output" || name == "--compress-program" || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && shortHas(v, 'o', "ktST") {
				return "sort " + name + " writes a file or runs a program"
			}
		case "tree":
			if v == "-o" || name == "--output" {
				return "tree -o writes a file"
			}
		case "date":
			if v == "-s" || name == "--set" || strings.HasPrefix(v, "-s") && !strings.HasPrefix(v, "--") {
				return "date -s sets the clock"
			}
		case "go":
			if name == "-toolexec" || name == "-exec" || (len(args) > 0 && args[0].val == "env" && (v == "-w" || v == "-u")) {
				return "go " + v + " runs a program or writes configuration"
			}
		case "kubectl":
			if name == "--kubeconfig" {
				return "kubectl --kubeconfig can run credential plugins"
			}
		case "set":
			if v == "-a" || v == "allexport" || strings.HasPrefix(v, "-") && strings.ContainsRune(v, 'a') {
				return "set -a exports every later assignment"
			}
		case "unset":
			if v == "-f" {
				return ""
			}
		case "read":
			return "read assigns variables from input"
		}
	}
	switch base {
	case "sed":
		if script, ok := firstOperand(args, "efl"); ok && sedWrites(script) && !hasArg(args, "--sandbox") {
			return "sed script writes files or runs commands (w, W, e, s///w, s///e)"
		}
	case "awk", "gawk", "mawk", "nawk":
		if prog, ok := firstOperand(args, "fvF"); ok && awkRuns(prog) {
			return base + " program runs commands or writes files (system, |, >, @load)"
		}
	case "xxd", "uniq":
		if n := countOperands(args); n >= 2 {
			return base + " with two operands writes its output file"
		}
	case "hostname":
		if countOperands(args) >= 1 || hasArg(args, "-F") || hasArg(args, "--file") {
			return "hostname NAME sets the host name"
		}
	}
	return ""
}

// shortHas reports whether a short-option cluster contains c before any
// option (in stop) that takes the rest of the word as its argument.
func shortHas(v string, c byte, stop string) bool {
	for k := 1; k < len(v); k++ {
		if v[k] == c {
			return true
		}
		if strings.IndexByte(stop, v[k]) >= 0 {
			return false
		}
	}
	return false
}

func hasArg(args []arg, v string) bool {
	for _, a := range args {
		if a.val == v {
			return true
		}
	}
	return false
}

func countOperands(args []arg) int {
	n := 0
	for _, a := range args {
		if a.computed || !strings.HasPrefix(a.val, "-") || a.val == "-" {
			n++
		}
	}
	return n
}

// firstOperand returns the script/program operand of sed or awk (the
// first non-option word, unless given with -e or -f). withArg are options
// that take the next word.
func firstOperand(args []arg, withArg string) (string, bool) {
	var scripts []string
	explicit := false
	for k := 0; k < len(args); k++ {
		v := args[k].val
		if args[k].computed {
			return "", false
		}
		if v == "--" {
			if !explicit && k+1 < len(args) {
				return args[k+1].val, true
			}
			break
		}
		if (v == "-e" || v == "--expression") && k+1 < len(args) {
			scripts = append(scripts, args[k+1].val)
			explicit = true
			k++
			continue
		}
		if e, ok := strings.CutPrefix(v, "--expression="); ok {
			scripts, explicit = append(scripts, e), true
			continue
		}
		if len(v) > 2 && v[0] == '-' && v[1] == 'e' {
			scripts, explicit = append(scripts, v[2:]), true
			continue
		}
		if strings.HasPrefix(v, "-") && len(v) > 1 {
			if len(v) == 2 && strings.IndexByte(withArg, v[1]) >= 0 {
				k++
			}
			continue
		}
		if !explicit {
			return v, true
		}
	}
	return strings.Join(scripts, "\n"), explicit
}

// sedWrites looks for w/W/e commands and s///w or s///e flags in a sed script.
func sedWrites(script string) bool {
	s := script
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case 'w', 'W', 'e':
			// a command letter at the start of a command (after an address)
			if isSedCmdStart(s, i) {
				return true
			}
		case 's', 'y':
			if !isSedCmdStart(s, i) || i+1 >= len(s) {
				continue
			}
			d := s[i+1]
			if d == '\\' || d == '\n' {
				continue
			}
			// skip the two (s) or two (y) delimited parts
			k, parts := i+2, 0
			for k < len(s) && parts < 2 {
				if s[k] == '\\' {
					k += 2
					continue
				}
				if s[k] == d {
					parts++
				}
				k++
			}
			// flags
			for k < len(s) && s[k] != ';' && s[k] != '\n' && s[k] != '}' {
				if c == 's' && (s[k] == 'w' || s[k] == 'e' || s[k] == 'W') {
					return true
				}
				k++
			}
			i = k
		}
	}
	return false
}

// isSedCmdStart reports whether s[i] sits where a sed command letter goes:
// after the start, ';', '{', '}', a newline, '!' or an address.
func isSedCmdStart(s string, i int) bool {
	k := i - 1
	for k >= 0 && (s[k] == ' ' || s[k] == '\t') {
		k--
	}
	if k < 0 {
		return true
	}
	switch c := s[k]; {
	case c == ';' || c == '{' || c == '}' || c == '\n' || c == '!':
		return true
	case c >= '0' && c <= '9' || c == '$' || c == '/' || c == ',':
		// after an address like 1, $, /re/, 1,5
		return true
	}
	return false
}

// awkRuns looks for ways an awk program can run commands or write files.
func awkRuns(prog string) bool {
	if strings.Contains(prog, "system") || strings.Contains(prog, "|") || strings.Contains(prog, "@load") {
		return true
	}
	// print > "file", printf … >> file
	for _, kw := range []string{"print", "printf"} {
		idx := 0
		for {
			k := strings.Index(prog[idx:], kw)
			if k < 0 {
				break
			}
			rest := prog[idx+k+len(kw):]
			end := strings.IndexAny(rest, ";}\n")
			if end < 0 {
				end = len(rest)
			}
			if strings.Contains(rest[:end], ">") {
				return true
			}
			idx += k + len(kw)
		}
	}
	return false
}

// noPathArgs are safe commands whose operands are not paths they read.
var noPathArgs = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, "pwd": true, "which": true, "type": true,
	"whoami": true, "id": true, "date": true, "uname": true, "hostname": true, "seq": true, "sleep": true,
	"test": true, "[": true, "basename": true, "dirname": true, "realpath": true, "readlink": true,
	"printenv": true, "nproc": true, "locale": true, "cd": true, "tr": true, ":": true, "set": true,
	"shift": true, "exit": true, "return": true, "break": true, "continue": true, "local": true,
	"unset": true, "getopts": true, "wait": true, "ps": true, "free": true, "uptime": true, "kubectl": true,
	"docker": true, "man": true, "alias": true, "pip": true, "pip3": true, "npm": true,
}

// secretNames look like credentials; a safe command naming one is not safe.
func secretLike(p string) bool {
	for _, comp := range strings.Split(p, "/") {
		switch comp {
		case ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".netrc", ".git-credentials", ".npmrc",
			".pypirc", "credentials", ".env", "shadow", "gshadow", ".password-store", ".vault-token":
			return true
		}
		if strings.HasPrefix(comp, ".env.") || strings.HasPrefix(comp, "id_rsa") || strings.HasPrefix(comp, "id_ed25519") ||
			strings.HasPrefix(comp, "id_ecdsa") || strings.HasPrefix(comp, "id_dsa") {
			return true
		}
		for _, ext := range []string{".pem", ".key", ".p12", ".pfx", ".kdbx"} {
			if strings.HasSuffix(comp, ext) {
				return true
			}
		}
	}
	return false
}

// outside says why a safe command reads outside the workspace or a secret.
func (j *judge) outside(base string, argv []arg) string {
	if noPathArgs[base] {
		return ""
	}
	args := argv[1:]
	if base == "git" && len(args) > 0 {
		args = args[1:]
	}
	skip := -1
	switch base {
	case "grep", "egrep", "fgrep", "rg", "sed", "awk", "gawk", "mawk", "nawk", "jq", "look":
		explicit := false
		for _, a := range args {
			if a.val == "-e" || a.val == "-f" || a.val == "--regexp" || a.val == "--file" || strings.HasPrefix(a.val, "--regexp=") || strings.HasPrefix(a.val, "--expression") {
				explicit = true
			}
		}
		if !explicit {
			for k, a := range args {
				if a.computed || !strings.HasPrefix(a.val, "-") {
					skip = k
					break
				}
			}
		}
	}
	for k, a := range args {
		if k == skip {
			continue
		}
		if a.computed {
			return base + " reads a path computed at run time: " + a.val
		}
		v := a.val
		if strings.HasPrefix(v, "-") {
			_, val, ok := strings.Cut(v, "=")
			if !ok {
				continue
			}
			v = val
		}
		if v == "" {
			continue
		}
		if secretLike(v) {
			return base + " reads a secret-looking file: " + v
		}
		if strings.HasPrefix(v, "/") {
			if dev, harmless := deviceTarget(v); dev && harmless {
				continue
			}
			return base + " reads outside the workspace: " + v
		}
		if strings.HasPrefix(v, "~") {
			return base + " reads outside the workspace: " + v
		}
		if c := path.Clean(v); c == ".." || strings.HasPrefix(c, "../") {
			return base + " reads outside the workspace: " + v
		}
		if j.cwd != "" {
			return base + " reads outside the workspace after cd " + j.cwd
		}
	}
	if j.cwd != "" && len(args) == 0 && (base == "ls" || base == "find" || base == "tree" || base == "du" || base == "cat" || base == "grep" || base == "rg") {
		return base + " lists outside the workspace after cd"
	}
	return ""
}

// downloaders fetch data from the network.
var downloaders = map[string]bool{
	"curl": true, "wget": true, "wget2": true, "aria2c": true, "axel": true, "nc": true, "ncat": true,
	"netcat": true, "socat": true, "fetch": true, "http": true, "https": true, "xh": true, "xhs": true,
	"httpie": true, "lwp-request": true, "lwp-download": true, "GET": true, "POST": true, "ftp": true,
	"tftp": true, "telnet": true, "ssh": true, "dig": true, "nslookup": true, "host": true, "drill": true,
	"rsync": true, "scp": true, "sftp": true, "lynx": true, "links": true, "w3m": true,
}

// isFeeder reports a downloader, or a decoder (base64 -d, xxd -r,
// openssl … -d, uudecode, gpg -d) whose output may be hidden code.
func isFeeder(base string, argv []arg) bool {
	if downloaders[base] {
		return true
	}
	args := argv[1:]
	switch base {
	case "base64", "base32", "basenc", "gbase64":
		for _, a := range args {
			if a.val == "--decode" || a.val == "-D" || len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.ContainsRune(a.val, 'd') {
				return true
			}
		}
	case "xxd":
		for _, a := range args {
			if a.val == "--revert" || len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.ContainsRune(a.val, 'r') {
				return true
			}
		}
	case "openssl":
		if len(args) > 0 && args[0].val == "s_client" {
			return true
		}
		for _, a := range args {
			if a.val == "-d" || a.val == "-decrypt" || a.val == "-base64" && hasArg(args, "-d") {
				return true
			}
		}
	case "uudecode", "mmencode":
		return true
	case "gpg", "gpg2", "age":
		for _, a := range args {
			if a.val == "-d" || a.val == "--decrypt" {
				return true
			}
		}
	}
	return false
}
