package shellpolicy

import (
	"path"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Stdin sinks: one notion of "a stage that runs code it reads from its
// standard input" (shells, interpreters reading their program or exec-ing
// what they read, sed e, awk system, make -f -, ed, gdb, parallel, at,
// crontab, read … eval loops) or "from a file the line wrote" (curl -o x;
// sh x). A download or a decoder feeding one is blocked
// (download-to-interpreter).

// interpreters run programs.
var interpreters = map[string]bool{
	"python": true, "python2": true, "python3": true, "pypy": true, "pypy3": true,
	"perl": true, "ruby": true, "node": true, "nodejs": true, "php": true,
	"lua": true, "luajit": true, "deno": true, "bun": true, "tclsh": true, "wish": true,
	"Rscript": true, "R": true, "irb": true, "jshell": true, "osascript": true, "pwsh": true,
	"expect": true, "guile": true, "racket": true, "sbcl": true, "clisp": true, "julia": true,
	"ts-node": true, "tsx": true, "groovy": true, "scala": true, "kotlin": true, "elixir": true, "erl": true,
}

// stdinCommanders read commands from their standard input whatever their
// arguments: editors in ex mode, debuggers, job schedulers, calculators
// and clients with shell escapes.
var stdinCommanders = map[string]bool{
	"ed": true, "ex": true, "gdb": true, "parallel": true, "at": true, "batch": true, "dc": true,
	"m4": true, "gnuplot": true, "sqlite3": true, "psql": true, "mysql": true, "lftp": true, "ftp": true,
	"lldb": true, "cgdb": true, "pdb": true, "bc": false,
}

func isInterpreter(base string) bool {
	if interpreters[base] {
		return true
	}
	for _, p := range []string{"python", "pypy", "perl", "ruby", "php", "lua", "node"} {
		if rest, ok := strings.CutPrefix(base, p); ok && rest != "" && strings.Trim(rest, "0123456789.-") == "" {
			return true
		}
	}
	return false
}

// isCodeRunner reports a program that runs code it is handed.
func isCodeRunner(base string) bool {
	_, shell := shellDialects[base]
	return shell || isInterpreter(base) || stdinCommanders[base] || base == "eval" || base == "source" || base == "." ||
		base == "busybox" || base == "toybox" || base == "env" || base == "xargs" || base == "script" || base == "make" ||
		base == "vim" || base == "vi" || base == "nvim" || base == "crontab"
}

func isStdinPath(s string) bool {
	switch s {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return strings.HasPrefix(s, "/proc/") && strings.HasSuffix(s, "/fd/0")
}

// stringIsSink reports whether a command string handed to a shell runs
// code from the standard input it inherits (sh -c 'cat | sh', awk's
// print | "sh").
func (j *judge) stringIsSink(s string) bool {
	f, err := newParser(syntax.LangBash).Parse(strings.NewReader(s), "")
	if err != nil {
		return true
	}
	sink := false
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 || sink {
			return !sink
		}
		var argv []arg
		for _, w := range c.Args {
			v, ok := j.knownWord(w)
			if !ok {
				sink = true
				return false
			}
			argv = append(argv, arg{val: v})
		}
		sink = sinkArgv(argv)
		return !sink
	})
	return sink
}

// sinkArgv is a quick, syntactic sinks test on a literal argv.
func sinkArgv(argv []arg) bool {
	base := baseName(argv[0].val)
	switch {
	case stdinCommanders[base]:
		return true
	case isInterpreter(base):
		stdin, _ := interpStdin(base, argv[1:])
		return stdin
	}
	if d, ok := shellDialects[base]; ok {
		_ = d
		for _, a := range argv[1:] {
			if strings.HasPrefix(a.val, "-") && strings.ContainsRune(a.val, 'c') {
				return false
			}
		}
		return len(argv) == 1 || isStdinPath(argv[len(argv)-1].val) || argv[1].val == "-s"
	}
	switch base {
	case "env", "nice", "nohup", "timeout", "stdbuf", "setsid", "busybox", "toybox", "command", "exec", "time":
		return len(argv) > 1 && sinkArgv(argv[1:])
	case "xargs":
		return true
	}
	return false
}

// interpStdin reports whether an interpreter reads its program from
// standard input, and whether it was given one inline (-c, -e, -m …).
func interpStdin(base string, args []arg) (stdinCode, inline bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.hasHole() {
			return true, false
		}
		v := a.val
		if v == "-" {
			return true, false
		}
		if v == "--" {
			if i+1 < len(args) {
				return isStdinPath(args[i+1].val), false
			}
			return true, false
		}
		if !strings.HasPrefix(v, "-") {
			if base == "deno" || base == "bun" {
				continue // subcommands
			}
			return isStdinPath(v), false
		}
		switch {
		case v == "-e" || v == "-E" && !strings.HasPrefix(base, "python") || v == "--eval" || v == "-p" || v == "--print" || v == "-r" && strings.HasPrefix(base, "php"):
			return false, true
		case v == "-m" && strings.HasPrefix(base, "python"):
			if i+1 < len(args) && (args[i+1].val == "code" || args[i+1].val == "pdb" || args[i+1].val == "IPython" || args[i+1].val == "runpy") {
				return true, false
			}
			return false, true
		case strings.HasPrefix(base, "python") && !strings.HasPrefix(v, "--") && strings.Contains(v[1:], "c"):
			return false, true
		case strings.HasPrefix(base, "perl") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v[1:], "eE"):
			return false, true
		case v == "-c" || v == "--command":
			return false, true
		case v == "-W" || v == "-X" || v == "-I" && !strings.HasPrefix(base, "perl") || v == "--require" || v == "--import" || v == "-f" && strings.HasPrefix(base, "php"):
			if v == "-f" && i+1 < len(args) {
				return isStdinPath(args[i+1].val), false
			}
			i++
		}
	}
	return true, false
}

// inlineArg returns an interpreter's inline program (-c, -e …).
func inlineArg(base string, args []arg) (arg, bool) {
	for k, a := range args {
		v := a.val
		isOpt := v == "-c" || v == "-e" || v == "--eval" || v == "-p" || v == "--print" || v == "-r" && strings.HasPrefix(base, "php") ||
			v == "-E" && strings.HasPrefix(base, "perl") || v == "--command" || v == "-Command"
		if strings.HasPrefix(base, "perl") && strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "e") {
			isOpt = true
		}
		if strings.HasPrefix(base, "python") && strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "c") {
			isOpt = true
		}
		if isOpt && k+1 < len(args) {
			return args[k+1], true
		}
	}
	return arg{}, false
}

// readsStdin and runsCode spot inline code that executes what it reads.
var (
	readsStdin = regexp.MustCompile(`stdin|STDIN|<STDIN>|<>|readFileSync\(\s*0|/dev/stdin|php://stdin|\binput\s*\(|\bgets\b|ARGF|io\.read|\$<|fileinput|sys\.argv|readline|\bopen\(\s*0`)
	runsCode   = map[string]*regexp.Regexp{
		"python": regexp.MustCompile(`\b(exec|eval|compile|__import__|getattr|globals|locals|vars|system|popen|spawn\w*|Popen|subprocess|pickle|marshal|shelve|runpy|importlib|ctypes|pty|dill|interact|InteractiveConsole)\b|os\.exec|yaml\.load\b|yaml\.unsafe_load`),
		"perl":   regexp.MustCompile(`\b(eval|system|exec|qx|open|do|require)\b|` + "`" + `|/[a-z]*ee[a-z]*\b`),
		"ruby":   regexp.MustCompile(`\b(eval|instance_eval|class_eval|module_eval|system|exec|spawn|Kernel|Open3|send|public_send|load|require)\b|IO\.popen|` + "`" + `|%x`),
		"node":   regexp.MustCompile(`\b(eval|Function|vm|child_process|execSync|spawnSync|execFile|execFileSync|spawn|exec)\b`),
		"php":    regexp.MustCompile(`\b(eval|assert|create_function|system|exec|shell_exec|passthru|popen|proc_open|include|include_once|require|require_once|pcntl_exec)\b|` + "`"),
		"lua":    regexp.MustCompile(`\b(load|loadstring|dofile|loadfile|require)\b|os\.execute|io\.popen`),
	}
	forkLoop = regexp.MustCompile(`\bfork\b`)
	loopWord = regexp.MustCompile(`\b(while|until|for|loop|repeat|do)\b`)
)

// codeRunsCode reports inline code that can execute text (what it read).
func codeRunsCode(base, code string) bool {
	for fam, re := range runsCode {
		if strings.HasPrefix(base, fam) || base == "nodejs" && fam == "node" || base == "luajit" && fam == "lua" {
			return re.MatchString(code)
		}
	}
	for _, re := range runsCode {
		if re.MatchString(code) {
			return true
		}
	}
	return false
}

// codeCalls finds shell command strings handed to system()-like calls in
// inline interpreter code (best effort: literal strings only).
var codeCalls = regexp.MustCompile(`(?:system|popen|exec|execSync|spawnSync|spawn|Popen|call|run|check_output|check_call|getoutput|getstatusoutput|shell_exec|passthru)\s*\(\s*\[?\s*(?:"([^"\\]*)"|'([^'\\]*)')`)

// streamMeta records what a command does with its standard input and
// output: downloads and decoders feed, sinks run what they read, echo and
// printf print known text.
func (j *judge) streamMeta(base string, argv []arg, ctx *callCtx, r *res) {
	p := j.pos(argv[0].pos)
	args := argv[1:]
	if isFeeder(base, argv) {
		r.feeds = true
	}
	j.fedWrites(base, argv, ctx, r)
	switch {
	case isInterpreter(base):
		stdin, inline := interpStdin(base, args)
		if stdin {
			r.sink = true
			if ctx.in.text != nil {
				j.inlineCode(*ctx.in.text, argv[0].pos)
			}
		}
		for _, a := range args {
			if a.fed {
				r.block(RuleDownloadToInterpreter, p, "%s runs downloaded or decoded data passed as an argument", base)
				return
			}
			if !strings.HasPrefix(a.val, "-") && j.fedFiles[cleanRel(a.val)] {
				r.block(RuleDownloadToInterpreter, p, "%s runs %s, which the line wrote from downloaded or decoded data", base, a.val)
				return
			}
		}
		if code, ok := inlineArg(base, args); ok && inline {
			if code.hasHole() {
				r.worse(Dangerous, base+" runs code computed at run time")
				r.sink = true
			} else {
				if readsStdin.MatchString(code.val) && codeRunsCode(base, code.val) {
					r.sink = true
				}
				if forkLoop.MatchString(code.val) && loopWord.MatchString(code.val) {
					r.block(RuleForkBomb, p, "%s code forks in a loop (fork bomb)", base)
					return
				}
				j.inlineCode(code.val, code.pos)
			}
		}
	case stdinCommanders[base]:
		r.sink = true
		r.worse(Dangerous, base+" runs commands it reads from its input")
		j.fileRunner(base, argv, "-x", r)
		j.fileRunner(base, argv, "-f", r)
	case base == "vim" || base == "vi" || base == "nvim" || base == "view":
		for _, a := range args {
			if a.val == "-e" || a.val == "-es" || a.val == "-E" || a.val == "-s" || a.val == "-Es" || a.val == "--headless" || a.val == "-" {
				r.sink = true
			}
		}
	case base == "make" || base == "gmake" || base == "bmake":
		for k, a := range args {
			f := ""
			switch {
			case (a.val == "-f" || a.val == "--file" || a.val == "--makefile") && k+1 < len(args):
				f = args[k+1].val
			case strings.HasPrefix(a.val, "--file=") || strings.HasPrefix(a.val, "--makefile="):
				f = a.val[strings.IndexByte(a.val, '=')+1:]
			case strings.HasPrefix(a.val, "-f") && len(a.val) > 2:
				f = a.val[2:]
			}
			if f == "" {
				continue
			}
			if isStdinPath(f) {
				r.sink = true
				r.worse(Dangerous, "make reads its makefile from its standard input")
			}
			if j.fedFiles[cleanRel(f)] {
				r.block(RuleDownloadToInterpreter, p, "make runs %s, which the line wrote from downloaded or decoded data", f)
			}
		}
	case base == "crontab":
		if len(args) == 0 || args[len(args)-1].val == "-" {
			r.sink = true
			r.worse(Dangerous, "crontab installs commands read from its standard input")
		} else if j.fedFiles[cleanRel(args[len(args)-1].val)] {
			r.block(RuleDownloadToInterpreter, p, "crontab installs %s, which the line wrote from downloaded or decoded data", args[len(args)-1].val)
		}
	case base == "echo" || base == "printf":
		if t, ok := echoText(j.lang, base, args); ok {
			r.text = &t
		}
	case base == "cat" || base == "tee":
		if base == "tee" || len(args) == 0 || len(args) == 1 && args[0].val == "-" {
			r.pass = true
		}
	case base == "seq" || base == "nproc" || base == "wc" && len(args) > 0 && strings.HasPrefix(args[0].val, "-"):
		r.num = true
	}
	if r.sink && ctx.in.fed {
		r.block(RuleDownloadToInterpreter, p, "downloaded or decoded data is piped into %s, which runs it", base)
	}
}

// fileRunner blocks a command that runs (via opt FILE) a file the line
// wrote from downloaded data.
func (j *judge) fileRunner(base string, argv []arg, opt string, r *res) {
	for k, a := range argv[1:] {
		if a.val == opt && k+2 < len(argv) {
			f := argv[k+2]
			if isStdinPath(f.val) {
				r.sink = true
			}
			if j.fedFiles[cleanRel(f.val)] {
				r.block(RuleDownloadToInterpreter, j.pos(argv[0].pos), "%s runs %s, which the line wrote from downloaded or decoded data", base, f.val)
			}
		}
	}
}

// fedWrites marks files a downloader or a decoder writes (curl -o, wget,
// tee of downloaded data), so that running them later is caught.
func (j *judge) fedWrites(base string, argv []arg, ctx *callCtx, r *res) {
	args := argv[1:]
	mark := func(f string) {
		if f != "" && f != "-" && !hasHole(f) {
			j.fedFiles[cleanRel(f)] = true
		}
	}
	urlBase := func() string {
		for _, a := range args {
			if strings.Contains(a.val, "://") {
				u := strings.SplitN(a.val, "?", 2)[0]
				return path.Base(u)
			}
		}
		return ""
	}
	switch base {
	case "curl":
		for k, a := range args {
			switch {
			case (a.val == "-o" || a.val == "--output") && k+1 < len(args):
				mark(args[k+1].val)
			case strings.HasPrefix(a.val, "--output="):
				mark(strings.TrimPrefix(a.val, "--output="))
			case a.val == "-O" || a.val == "--remote-name" || a.val == "--remote-name-all" || strings.HasPrefix(a.val, "-") && !strings.HasPrefix(a.val, "--") && strings.ContainsRune(a.val, 'O'):
				mark(urlBase())
			}
		}
	case "wget", "wget2":
		out := urlBase()
		for k, a := range args {
			switch {
			case (a.val == "-O" || a.val == "--output-document") && k+1 < len(args):
				out = args[k+1].val
			case strings.HasPrefix(a.val, "--output-document="):
				out = strings.TrimPrefix(a.val, "--output-document=")
			case strings.HasPrefix(a.val, "-O") && len(a.val) > 2:
				out = a.val[2:]
			}
		}
		if out == "-" {
			r.feeds = true
		}
		mark(out)
	case "aria2c", "axel", "fetch", "lwp-download":
		for k, a := range args {
			if (a.val == "-o" || a.val == "--out") && k+1 < len(args) {
				mark(args[k+1].val)
			}
		}
		mark(urlBase())
	case "tee", "dd", "cp", "install":
		if ctx.in.fed || r.feeds || base == "cp" && len(args) >= 2 && j.fedFiles[cleanRel(args[0].val)] {
			for _, a := range args {
				v := strings.TrimPrefix(a.val, "of=")
				if !strings.HasPrefix(v, "-") {
					mark(v)
				}
			}
		}
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd":
		for _, a := range args {
			if strings.HasPrefix(a.val, "-") {
				continue
			}
			for _, ext := range []string{".gz", ".bz2", ".xz", ".zst", ".z", ".Z"} {
				if f, ok := strings.CutSuffix(a.val, ext); ok && isFeeder(base, argv) {
					mark(f)
				}
			}
		}
	case "openssl":
		if isFeeder(base, argv) {
			for k, a := range args {
				if a.val == "-out" && k+1 < len(args) {
					mark(args[k+1].val)
				}
			}
		}
	}
}

// inlineCode judges the literal command strings inline interpreter code
// passes to system()-like calls (best effort).
func (j *judge) inlineCode(code string, p syntax.Pos) {
	j.lenient++
	for _, m := range codeCalls.FindAllStringSubmatch(code, 32) {
		s := m[1] + m[2]
		if s != "" {
			j.shellString(s, p, shellDialects["sh"].langs, nil, stream{})
		}
	}
	j.lenient--
}

// downloaders fetch data from the network.
var downloaders = map[string]bool{
	"curl": true, "wget": true, "wget2": true, "aria2c": true, "axel": true, "nc": true, "ncat": true,
	"netcat": true, "socat": true, "fetch": true, "http": true, "https": true, "xh": true, "xhs": true,
	"httpie": true, "lwp-request": true, "lwp-download": true, "GET": true, "POST": true, "ftp": true,
	"tftp": true, "telnet": true, "ssh": true, "dig": true, "nslookup": true, "host": true, "drill": true,
	"rsync": true, "scp": true, "sftp": true, "lynx": true, "links": true, "w3m": true, "elinks": true,
	"s3cmd": true, "aws": true, "gsutil": true, "rclone": true, "smbclient": true, "tor": true,
}

// isFeeder reports a downloader, or a decoder whose output may be code
// the judge cannot read: base64 -d, xxd -r, openssl … -d, uudecode,
// gpg -d, gzip -d and other decompressors, rev, git archive --remote.
func isFeeder(base string, argv []arg) bool {
	if downloaders[base] {
		return true
	}
	args := argv[1:]
	shortHas := func(c byte) bool {
		for _, a := range args {
			if len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && strings.IndexByte(a.val[1:], c) >= 0 {
				return true
			}
		}
		return false
	}
	longHas := func(names ...string) bool {
		for _, a := range args {
			for _, n := range names {
				if a.val == n {
					return true
				}
			}
		}
		return false
	}
	switch base {
	case "base64", "base32", "basenc", "gbase64":
		return shortHas('d') || shortHas('D') || longHas("--decode")
	case "xxd":
		return shortHas('r') || longHas("--revert", "-revert")
	case "openssl":
		if len(args) > 0 && (args[0].val == "s_client" || args[0].val == "s_server") {
			return true
		}
		return longHas("-d", "-decrypt", "--decrypt")
	case "uudecode", "mmencode", "zcat", "gunzip", "bunzip2", "bzcat", "unxz", "xzcat", "lzcat", "unlzma", "unzstd", "zstdcat",
		"uncompress", "lz4cat", "brotli", "rev", "unpigz", "pigz":
		if base == "pigz" || base == "brotli" {
			return shortHas('d') || longHas("--decompress")
		}
		return true
	case "gzip", "bzip2", "xz", "lzma", "zstd", "lz4", "compress":
		return shortHas('d') || longHas("--decompress", "--uncompress")
	case "unzip":
		return shortHas('p')
	case "tar":
		return shortHas('O') || longHas("--to-stdout")
	case "gpg", "gpg2", "age":
		return shortHas('d') || longHas("--decrypt")
	case "git":
		for _, a := range args {
			if strings.HasPrefix(a.val, "--remote") {
				return true
			}
		}
		return len(args) > 0 && (args[0].val == "archive" && longHas("--remote") || args[0].val == "show" && false)
	}
	return false
}
