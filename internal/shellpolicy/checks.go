package shellpolicy

import (
	"path"
	"strings"
)

// Checks for what a spec's option lists cannot say.

func (j *judge) operandsAs(p *parsed, k kind, r *res) {
	for _, a := range p.operands {
		j.checkKind(p.s.name, k, nil, a, r)
	}
}

func checkDiff(j *judge, p *parsed, r *res) {
	j.operandsAs(p, kPath, r)
	if p.has("-r", "--recursive") {
		roots := p.operands
		j.recursiveRead(roots, nil, "diff -r", r)
	}
}

func checkLook(j *judge, p *parsed, r *res) {
	if len(p.operands) == 2 {
		j.checkKind("look", kPath, nil, p.operands[1], r)
	}
}

func checkPager(j *judge, p *parsed, r *res) {
	for _, a := range p.operands {
		if strings.HasPrefix(a.val, "+") || a.hasHole() && !strings.HasPrefix(a.val, "/") {
			r.worse(Dev, p.s.name+" "+shown(a.val)+": a +command or a computed operand")
			continue
		}
		j.checkKind(p.s.name, kPath, nil, a, r)
	}
}

func checkPrintf(j *judge, p *parsed, r *res) {
	if len(p.operands) == 0 {
		r.worse(Dev, "printf without a format")
	}
}

func checkDate(j *judge, p *parsed, r *res) {
	for _, a := range p.operands {
		if !strings.HasPrefix(a.val, "+") {
			r.worse(Dangerous, "date "+shown(a.val)+" sets the system clock")
		}
	}
}

// checkPs: BSD-style words (ps aux) may not show the environment (e).
func checkPs(j *judge, p *parsed, r *res) {
	for k := 0; k < len(p.operands); k++ {
		a := p.operands[k]
		v := a.val
		if a.hasHole() {
			r.worse(Dev, "ps with a computed argument")
			continue
		}
		if k > 0 && strings.ContainsAny(p.operands[k-1].val, "oO") && isBSDps(p.operands[k-1].val) {
			continue // a format after BSD o
		}
		if !isBSDps(v) {
			if strings.Trim(v, "0123456789,") == "" {
				continue // pids
			}
			r.worse(Dev, "ps "+shown(v)+" is not an argument warden knows to be safe")
			continue
		}
		if strings.ContainsRune(v, 'e') {
			r.worse(Dangerous, "ps "+v+" shows every process's environment (tokens and keys in it)")
		}
	}
}

func isBSDps(v string) bool {
	if v == "" {
		return false
	}
	for _, c := range v {
		if !strings.ContainsRune("auxwfrTjlsvmhHcnSgZoOe", c) {
			return false
		}
	}
	return true
}

func checkMan(j *judge, p *parsed, r *res) {
	for _, a := range p.operands {
		if strings.ContainsRune(a.val, '/') || a.hasHole() {
			r.worse(Dev, "man "+shown(a.val)+" renders a file, not a manual page")
		}
	}
}

func checkCd(j *judge, p *parsed, r *res) {
	target := "~"
	if len(p.operands) > 0 {
		a := p.operands[0]
		j.checkKind("cd", kList, nil, a, r)
		target = a.val
		if a.hasHole() {
			target = "?"
		}
	}
	c := cdTarget(j.cwd, target)
	r.cwd = &c
}

// cdTarget is where cd TARGET moves from cwd ("" the workspace root,
// "?" unknown, else a workspace-relative or absolute path).
func cdTarget(cwd, target string) string {
	switch {
	case target == "?" || target == "-" || hasHole(target) || cwd == "?":
		return "?"
	case target == "~" || strings.HasPrefix(target, "~/") || strings.HasPrefix(target, "~"):
		return path.Clean(target)
	case target == wsRoot || strings.HasPrefix(target, wsRoot+"/"):
		rel := strings.TrimPrefix(strings.TrimPrefix(target, wsRoot), "/")
		if rel == "" {
			return ""
		}
		return path.Clean(rel)
	case strings.HasPrefix(target, "/"):
		return path.Clean(target)
	case strings.HasPrefix(cwd, "/") || strings.HasPrefix(cwd, "~"):
		return path.Join(cwd, target)
	}
	c := path.Clean(path.Join(cwd, target))
	switch {
	case c == ".":
		return ""
	case c == ".." || strings.HasPrefix(c, "../"):
		return "?"
	}
	return c
}

// checkTest: test and [ evaluate the subscript of -v NAME.
func checkTest(j *judge, p *parsed, r *res) {
	ops := p.operands
	for k, a := range ops {
		if (a.val == "-v" || a.val == "-R") && k+1 < len(ops) {
			j.nameCtx(ops[k+1].val)
		}
	}
	if p.s.name == "[" && (len(ops) == 0 || ops[len(ops)-1].val != "]") {
		r.worse(Dev, "[ without its closing ]")
	}
}

var setNames = map[string]Class{
	"errexit": Safe, "nounset": Safe, "xtrace": Safe, "pipefail": Safe, "noglob": Safe, "noclobber": Safe, "verbose": Safe,
	"braceexpand": Safe, "errtrace": Safe, "hashall": Safe, "noexec": Safe, "posix": Safe, "ignoreeof": Safe, "notify": Safe,
	"physical": Safe, "emacs": Safe, "vi": Safe, "history": Safe, "interactive-comments": Safe, "monitor": Safe, "nolog": Safe,
	"allexport": Dangerous, "functrace": Dev, "keyword": Dangerous, "onecmd": Dev, "privileged": Dev,
}

// checkSet: set's options change how the shell runs later commands.
func checkSet(j *judge, p *parsed, r *res) {
	args := p.argv[1:]
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case v == "--" || v == "-" || !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "+"):
			return // the positional parameters follow
		case v == "-o" || v == "+o":
			if k+1 >= len(args) {
				return
			}
			k++
			c, ok := setNames[args[k].val]
			if !ok {
				c = Dev
			}
			if c > Safe {
				r.worse(c, "set -o "+args[k].val+" changes how later commands run")
			}
		default:
			for _, ch := range v[1:] {
				switch {
				case ch == 'o':
					if k+1 < len(args) {
						k++
						c, ok := setNames[args[k].val]
						if !ok {
							c = Dev
						}
						if c > Safe {
							r.worse(c, "set -o "+args[k].val+" changes how later commands run")
						}
					}
				case ch == 'a':
					r.worse(Dangerous, "set -a exports every later assignment to the commands")
				case ch == 'k':
					r.worse(Dangerous, "set -k passes assignments anywhere in a command to its environment")
				case ch == 'T':
					r.worse(Dev, "set -T makes traps run inside functions")
				case strings.ContainsRune("euxvfnhCEBbHmpP", ch):
				default:
					r.worse(Dev, "set -"+string(ch)+" is not an option warden knows to be safe")
				}
			}
		}
	}
}

func checkUnset(j *judge, p *parsed, r *res) {
	for _, a := range p.operands {
		j.nameCtx(a.val)
		if shellSensitive[a.val] && !p.has("-f") {
			r.worse(Dev, "unset "+a.val+" changes how later commands run")
		}
	}
}

func checkGetopts(j *judge, p *parsed, r *res) {
	if len(p.operands) >= 2 {
		j.nameCtx(p.operands[1].val)
	}
}

func checkDeclArgv(j *judge, p *parsed, r *res) {
	j.declArgv(p.s.name, p.argv, r)
}

// patternFirst splits a grep-like command's operands into its pattern (when
// not given with -e or -f) and its files.
func patternFirst(p *parsed, explicit ...string) []arg {
	if p.has(explicit...) || len(p.operands) == 0 {
		return p.operands
	}
	return p.operands[1:]
}

func checkGrep(j *judge, p *parsed, r *res) {
	files := patternFirst(p, "-e", "--regexp", "-f", "--file")
	for _, a := range files {
		j.checkKind(p.s.name, kPath, nil, a, r)
	}
	recursive := p.has("-r", "--recursive", "-R", "--dereference-recursive")
	for _, d := range p.values("-d", "--directories") {
		if d.val == "recurse" || d.hasHole() {
			recursive = true
		}
	}
	if p.has("-R", "--dereference-recursive") {
		r.worse(Dangerous, p.s.name+" -R follows symbolic links, out of the workspace too")
	}
	if !recursive {
		return
	}
	if len(files) == 0 {
		files = []arg{{val: "."}}
	}
	var ex []exclusion
	for _, v := range p.values("--exclude") {
		ex = append(ex, exclusion{glob: v.val, files: true})
	}
	for _, v := range p.values("--exclude-dir") {
		ex = append(ex, exclusion{glob: v.val, dirs: true})
	}
	j.recursiveRead(files, ex, p.s.name+" -r", r)
}

func checkRg(j *judge, p *parsed, r *res) {
	listOnly := p.has("--files", "--type-list")
	files := p.operands
	if !listOnly {
		files = patternFirst(p, "-e", "--regexp", "-f", "--file")
	}
	for _, a := range files {
		j.checkKind("rg", kPath, nil, a, r)
	}
	if p.has("-L", "--follow") {
		r.worse(Dangerous, "rg -L follows symbolic links, out of the workspace too")
	}
	if listOnly || p.has("--type-list") {
		return
	}
	if len(files) == 0 {
		files = []arg{{val: "."}}
	}
	ci := p.has("--glob-case-insensitive")
	var ex []exclusion
	for _, v := range p.values("-g", "--glob") {
		if g, ok := strings.CutPrefix(v.val, "!"); ok {
			ex = append(ex, exclusion{glob: g, files: true, dirs: true, ci: ci})
		}
	}
	for _, v := range p.values("--iglob") {
		if g, ok := strings.CutPrefix(v.val, "!"); ok {
			ex = append(ex, exclusion{glob: g, files: true, dirs: true, ci: true})
		}
	}
	hidden := p.has("--hidden", "-.")
	unrestricted := 0
	for _, u := range p.opts {
		if u.name == "-u" || u.name == "--unrestricted" {
			unrestricted++
		}
	}
	if unrestricted >= 2 {
		hidden = true
	}
	// Hidden names are skipped only when no ignore file (which the agent
	// may write) can whitelist them back: rg searches a hidden file an
	// ignore file names with !.
	if !hidden && (p.has("--no-ignore") || unrestricted >= 1) {
		ex = append(ex, exclusion{glob: ".*", files: true, dirs: true})
	}
	j.recursiveRead(files, ex, "rg", r)
}

func checkFd(j *judge, p *parsed, r *res) {
	for k, a := range p.operands {
		if k == 0 {
			continue // the pattern
		}
		j.checkKind(p.s.name, kList, nil, a, r)
	}
	if p.has("-L", "--follow") {
		r.worse(Dangerous, p.s.name+" -L follows symbolic links, out of the workspace too")
	}
}

// checkJq: jq filters are a language; import and include load modules
// from outside the workspace.
func checkJq(j *judge, p *parsed, r *res) {
	files := p.operands
	if !p.has("-f", "--from-file") && len(files) > 0 {
		filter := files[0]
		files = files[1:]
		if strings.Contains(filter.val, "import") || strings.Contains(filter.val, "include") || strings.Contains(filter.val, "modulemeta") || strings.Contains(filter.val, "$__prog") {
			r.worse(Dev, "jq filter loads modules (import, include)")
		}
	} else if p.has("-f", "--from-file") {
		r.worse(Dev, "jq -f reads its filter from a file warden cannot see")
	}
	if len(p.values("-L")) > 0 {
		r.worse(Dev, "jq -L searches modules in another directory")
	}
	if p.has("--args", "--jsonargs") {
		return // the rest are values, not files
	}
	for _, a := range files {
		j.checkKind("jq", kPath, nil, a, r)
	}
}

// Git checks.

// checkGit judges git's own options (before the subcommand).
func checkGit(j *judge, p *parsed, r *res) {}

// checkGitPaths checks the operands of a git subcommand that may be paths
// (pathspecs) or REV:PATH (a file from history): a masked name loses Safe.
func checkGitPaths(j *judge, p *parsed, r *res) {
	for _, a := range p.operands {
		j.gitOperand(a, r)
	}
}

func (j *judge) gitOperand(a arg, r *res) {
	v := a.val
	if a.hasHole() {
		r.worse(Dev, "git with an operand computed at run time")
		return
	}
	if strings.HasPrefix(v, ":(") {
		k := strings.IndexByte(v, ')')
		if k < 0 || strings.Contains(v[:k], "exclude") {
			return
		}
		v = v[k+1:]
	} else if strings.HasPrefix(v, ":!") || strings.HasPrefix(v, ":^") {
		return
	} else if strings.HasPrefix(v, ":/") {
		v = v[2:]
	} else if k := strings.IndexByte(v, ':'); k >= 0 {
		// REV:PATH, :PATH, :N:PATH
		v = v[k+1:]
		if len(v) > 1 && v[0] >= '0' && v[0] <= '3' && v[1] == ':' {
			v = v[2:]
		}
		if v == "" {
			return
		}
	}
	// Git reads what the repository tracks, masked files included if
	// someone committed them (a non-goal: masks cover the working tree);
	// naming a masked path is what loses Safe. Git's history is not behind
	// the jail's mounts, so the masks hold there too. A pathspec glob is
	// not checked against the masks: git would show a tracked masked file
	// without any pathspec as well.
	if strings.ContainsAny(v, "*?[") {
		v = literalPrefix(v)
		if v == "" {
			return
		}
	}
	saveJail := j.opts.Jailed
	j.opts.Jailed = false
	c, why := j.readPath(arg{val: v}, "git ")
	j.opts.Jailed = saveJail
	if c > Safe {
		r.worse(c, why)
	}
}

func checkGitGrep(j *judge, p *parsed, r *res) {
	for _, a := range patternFirst(p, "-e", "-f") {
		j.gitOperand(a, r)
	}
}

func checkGitList(j *judge, p *parsed, r *res) {
	if len(p.operands) > 0 && !p.has("-l", "--list") {
		r.worse(Dev, p.s.name+" "+shown(p.operands[0].val)+" creates or changes a ref")
	}
}

func checkGitConfig(j *judge, p *parsed, r *res) {
	if !p.has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l") {
		r.worse(Dev, "git config without --get or --list changes configuration")
	}
}

// checkNoOperand: an operand makes the command change the system.
func checkNoOperand(why string) func(*judge, *parsed, *res) {
	return func(j *judge, p *parsed, r *res) {
		if len(p.operands) > 0 {
			r.worse(Dangerous, p.s.name+" "+shown(p.operands[0].val)+" "+why)
		}
	}
}

// checkOutputOperand: a second operand is the file the command writes.
func checkOutputOperand(j *judge, p *parsed, r *res) {
	for k, a := range p.operands {
		if k == 0 {
			j.checkKind(p.s.name, kPath, nil, a, r)
			continue
		}
		r.worse(Dangerous, p.s.name+" writes its output to file "+a.val)
	}
}

// literalPrefix is the directories of a glob path before its first
// component with a glob character ("src/*.go" is "src").
func literalPrefix(p string) string {
	comps := strings.Split(p, "/")
	for k, c := range comps {
		if strings.ContainsAny(c, "*?[") {
			return strings.Join(comps[:k], "/")
		}
	}
	return p
}
