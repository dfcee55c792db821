package shellpolicy

// Tools with subcommands: git, go, kubectl, docker, pip, npm, and the
// version queries of compilers and interpreters. A subcommand that is not
// listed is judged by the dev table, else Dangerous (unlisted below).

var gitGlobal = cat(flags("P", "no-pager", "no-optional-locks", "literal-pathspecs", "glob-pathspecs", "noglob-pathspecs", "icase-pathspecs",
	"no-replace-objects", "version", "help", "no-advice", "no-lazy-fetch"),
	[]opt{o(kList, "-C"), o(kAny, "--namespace"),
		danger("sets configuration that can run commands (core.pager, diff.external, alias.*)", kAny, "-c", "--config-env"),
		danger("points at a repository whose configuration can run commands", kAny, "--git-dir", "--work-tree"),
		{names: []string{"--exec-path"}, arg: kAny, optional: true, danger: "runs git commands from another directory"},
		{names: []string{"-p", "--paginate"}, danger: "runs a pager"}})

// diffOpts are the options of git's diff machinery (diff, log -p, show).
var diffOpts = cat(flags("puswbRaz123", "patch", "no-patch", "raw", "patch-with-raw", "patch-with-stat", "numstat", "shortstat", "summary", "name-only", "name-status",
	"full-index", "binary", "no-renames", "check", "minimal", "patience", "histogram", "text", "ignore-space-at-eol", "ignore-space-change", "ignore-all-space",
	"ignore-blank-lines", "ignore-cr-at-eol", "no-color", "no-prefix", "default-prefix", "ita-invisible-in-index", "ita-visible-in-index", "no-ext-diff", "textconv",
	"no-textconv", "exit-code", "quiet", "cached", "staged", "merge-base", "no-index", "base", "ours", "theirs", "irreversible-delete", "function-context", "no-indent-heuristic",
	"indent-heuristic", "compact-summary", "find-copies-harder", "full-diff", "color-moved-ws", "no-color-moved", "no-color-moved-ws", "no-relative"),
	[]opt{{names: []string{"-U", "--unified"}, arg: kNum}, {names: []string{"--stat", "--dirstat", "--dirstat-by-file"}, arg: kAny, optional: true},
		{names: []string{"--color", "--word-diff", "--color-words", "--color-moved", "--submodule", "--ignore-submodules", "--relative", "--find-renames", "--find-copies",
			"--break-rewrites", "--abbrev", "--diff-merges", "--anchored", "--ws-error-highlight"}, arg: kAny, optional: true},
		o(kAny, "--diff-filter", "--diff-algorithm", "--word-diff-regex", "--src-prefix", "--dst-prefix", "--line-prefix", "-S", "-G", "--find-object", "--inter-hunk-context",
			"--stat-width", "--stat-name-width", "--stat-count", "--stat-graph-width", "--output-indicator-new", "--output-indicator-old", "--output-indicator-context", "--skip-to", "--rotate-to", "-l"),
		{names: []string{"-M", "-C", "-B"}, arg: kAny, optional: true}, o(kPath, "-O"),
		danger("writes its output to a file", kAny, "--output"), danger("runs the configured external diff program", kNone, "--ext-diff")})

var logOpts = cat(diffOpts, flags("ciEFP", "oneline", "graph", "abbrev-commit", "no-abbrev-commit", "all", "reverse", "first-parent", "no-merges", "merges", "follow",
	"full-history", "simplify-by-decoration", "topo-order", "date-order", "author-date-order", "relative-date", "left-right", "cherry-pick", "cherry-mark", "boundary",
	"parents", "children", "regexp-ignore-case", "all-match", "invert-grep", "no-decorate", "dense", "sparse", "simplify-merges", "ancestry-path", "bisect", "no-walk",
	"do-walk", "mailmap", "no-mailmap", "use-mailmap", "log-size", "source", "remove-empty", "clear-decorations", "no-notes", "show-pulls", "left-only", "right-only", "cherry", "walk-reflogs",
	"count", "timestamp", "basic-regexp", "extended-regexp", "fixed-strings", "perl-regexp", "no-expand-tabs", "show-linear-break", "no-min-parents", "no-max-parents", "stdin", "alternate-refs",
	"single-worktree", "exclude-first-parent-only", "no-graph"),
	[]opt{o(kNum, "-n", "--max-count", "--skip", "--min-parents", "--max-parents"), {names: []string{"--decorate", "--branches", "--tags", "--remotes", "--glob", "--pretty", "--notes", "--expand-tabs", "--show-notes", "--graph"}, arg: kAny, optional: true},
		o(kAny, "--since", "--after", "--until", "--before", "--author", "--committer", "--grep", "--grep-reflog", "--format", "--date", "--encoding", "--decorate-refs", "--decorate-refs-exclude",
			"--exclude", "--since-as-filter", "--ancestry-path")})

var statusOpts = cat(flags("sbvz", "short", "branch", "long", "verbose", "no-column", "ahead-behind", "no-ahead-behind", "renames", "no-renames", "show-stash", "null"),
	[]opt{{names: []string{"--porcelain", "--untracked-files", "-u", "--ignored", "--ignore-submodules", "--column", "--find-renames"}, arg: kAny, optional: true}})

var gitSpec = &spec{name: "git", opts: gitGlobal, noPermute: true, unlisted: Dangerous, check: checkGit,
	match: []string{"git status", "git -C sub log -1"}, notMatch: []string{"git push", "git --git-dir=x log"},
	subs: map[string]*spec{
		"":              {name: "git", match: []string{"git --version", "git"}, notMatch: []string{"git -c core.pager=sh log", "git --git-dir=/tmp/x/.git log"}},
		"status":        {name: "git status", operands: kAny, opts: statusOpts, check: checkGitPaths, match: []string{"git status", "git status --short", "git -C sub status", "git status -sb"}, notMatch: []string{"git status .env", "git -C .. status", "git -C /etc status"}},
		"log":           {name: "git log", operands: kAny, numOpt: true, opts: logOpts, check: checkGitPaths, match: []string{"git log -5 --oneline", "git log --author=su", "git log --oneline -n 5", "git --no-pager log -1", "git log -p -- src", "git log --grep=reboot"}, notMatch: []string{"git log -p -- .env", "git log --output=x", "git -C .. log -p", "git -p log"}},
		"diff":          {name: "git diff", operands: kAny, opts: diffOpts, check: checkGitPaths, match: []string{"git diff", "git diff HEAD~1", "git diff --stat", "git diff --cached -- src"}, notMatch: []string{"git diff --output=x", "git diff --ext-diff", "git diff HEAD:.env HEAD~1:.env"}},
		"show":          {name: "git show", operands: kAny, numOpt: true, opts: logOpts, check: checkGitPaths, match: []string{"git show HEAD:go.mod", "git show --stat HEAD", "git show"}, notMatch: []string{"git show :.env", "git show HEAD:.env", "git show HEAD:../x"}},
		"blame":         {name: "git blame", operands: kAny, opts: cat(flags("ltsewpcfnb", "porcelain", "line-porcelain", "root", "show-stats", "incremental", "score-debug", "show-name", "show-number", "show-email", "reverse", "first-parent", "color-lines", "color-by-age", "progress", "no-progress", "minimal"), []opt{o(kAny, "-L", "--date", "--ignore-rev"), {names: []string{"-M", "-C", "--abbrev"}, arg: kAny, optional: true}, o(kPath, "-S", "--ignore-revs-file", "--contents")}), check: checkGitPaths, match: []string{"git blame main.go", "git blame -L 1,10 f"}, notMatch: []string{"git blame .env"}},
		"rev-parse":     {name: "git rev-parse", operands: kAny, opts: cat(flags("q", "show-toplevel", "show-prefix", "show-cdup", "git-dir", "git-common-dir", "is-inside-work-tree", "is-inside-git-dir", "is-bare-repository", "is-shallow-repository", "verify", "quiet", "symbolic", "symbolic-full-name", "all", "absolute-git-dir", "show-superproject-working-tree", "local-env-vars", "sq-quote", "revs-only", "no-revs", "flags", "no-flags", "show-object-format", "show-ref-format", "shared-index-path", "keep-dashdash", "stop-at-non-option", "sq", "not"), []opt{{names: []string{"--abbrev-ref", "--short", "--branches", "--tags", "--remotes", "--glob", "--disambiguate", "--show-object-format"}, arg: kAny, optional: true}, o(kAny, "--git-path", "--default", "--since", "--after", "--until", "--before", "--resolve-git-dir", "--prefix", "--path-format", "--exclude")}), match: []string{"git rev-parse HEAD", "git rev-parse --show-toplevel", "git rev-parse --abbrev-ref HEAD"}, notMatch: []string{"git rev-parse --foo"}},
		"ls-files":      {name: "git ls-files", operands: kAny, opts: cat(flags("cdmoiskuztvfr", "cached", "deleted", "modified", "others", "ignored", "stage", "unmerged", "killed", "directory", "no-empty-directory", "exclude-standard", "error-unmatch", "full-name", "recurse-submodules", "debug", "deduplicate", "sparse", "resolve-undo"), []opt{o(kAny, "-x", "--exclude", "--exclude-per-directory", "--with-tree", "--format"), o(kPath, "-X", "--exclude-from"), {names: []string{"--abbrev", "--eol"}, arg: kAny, optional: true}}), check: checkGitPaths, match: []string{"git ls-files", "git ls-files -m"}, notMatch: []string{"git ls-files -X .env"}},
		"describe":      {name: "git describe", operands: kAny, opts: cat(flags("", "tags", "all", "always", "long", "exact-match", "first-parent", "contains", "debug"), []opt{{names: []string{"--dirty", "--broken", "--abbrev"}, arg: kAny, optional: true}, o(kAny, "--candidates", "--match", "--exclude")}), match: []string{"git describe --tags"}, notMatch: []string{"git describe --foo"}},
		"shortlog":      {name: "git shortlog", operands: kAny, opts: cat(flags("snec", "summary", "numbered", "email", "committer"), []opt{o(kAny, "--format", "--group"), {names: []string{"-w"}, arg: kAny, optional: true}}), check: checkGitPaths, match: []string{"git shortlog -sn"}, notMatch: []string{"git shortlog --x"}},
		"grep":          {name: "git grep", operands: kAny, numOpt: true, opts: cat(flags("nivclLhHoqEFGPIWpz", "line-number", "ignore-case", "word-regexp", "invert-match", "count", "files-with-matches", "name-only", "files-without-match", "only-matching", "quiet", "extended-regexp", "fixed-strings", "basic-regexp", "perl-regexp", "function-context", "show-function", "break", "heading", "full-name", "column", "and", "or", "not", "all-match", "cached", "recurse-submodules", "text", "null"), []opt{o(kAny, "-e"), o(kPath, "-f"), o(kNum, "-A", "-B", "-C", "--max-depth", "--threads", "-m", "--max-count", "--after-context", "--before-context", "--context"), {names: []string{"--color"}, arg: kAny, optional: true}, {names: []string{"-O", "--open-files-in-pager"}, arg: kAny, optional: true, danger: "runs a pager on the files it finds"}}), check: checkGitGrep, match: []string{"git grep -n TODO", "git grep -e x -- src"}, notMatch: []string{"git grep -O'sh -c x' y", "git grep --untracked x", "git grep x -- .env"}},
		"cat-file":      {name: "git cat-file", operands: kAny, opts: flags("tsep", "textconv", "filters", "follow-symlinks", "allow-unknown-type", "mailmap", "use-mailmap"), check: checkGitPaths, match: []string{"git cat-file -p HEAD", "git cat-file -t HEAD:go.mod"}, notMatch: []string{"git cat-file -p HEAD:.env"}},
		"ls-tree":       {name: "git ls-tree", operands: kAny, opts: cat(flags("drtlz", "name-only", "name-status", "object-only", "full-name", "full-tree", "long"), []opt{{names: []string{"--abbrev"}, arg: kAny, optional: true}, o(kAny, "--format")}), check: checkGitPaths, match: []string{"git ls-tree -r HEAD"}, notMatch: []string{"git ls-tree --x"}},
		"rev-list":      {name: "git rev-list", operands: kAny, numOpt: true, opts: logOpts, check: checkGitPaths, match: []string{"git rev-list --count HEAD"}, notMatch: []string{"git rev-list --output=x HEAD"}},
		"branch":        {name: "git branch", operands: kAny, opts: cat(flags("arvli", "all", "remotes", "verbose", "list", "show-current", "no-color", "no-column", "ignore-case", "omit-empty"), []opt{{names: []string{"--contains", "--no-contains", "--merged", "--no-merged", "--color", "--column", "--abbrev", "--points-at"}, arg: kAny, optional: true}, o(kAny, "--sort", "--format")}), check: checkGitList, match: []string{"git branch", "git branch --show-current", "git branch -a", "git branch -vv", "git branch --list 'feat*'"}, notMatch: []string{"git branch new", "git branch -D main", "git branch -m a b"}},
		"tag":           {name: "git tag", operands: kAny, opts: cat(flags("li", "list", "ignore-case", "no-color", "no-column", "omit-empty"), []opt{{names: []string{"-n", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--color", "--column"}, arg: kAny, optional: true}, o(kAny, "--sort", "--format")}), check: checkGitList, match: []string{"git tag", "git tag -l 'v*'", "git tag --list"}, notMatch: []string{"git tag v1", "git tag -d v1"}},
		"remote":        {name: "git remote", subs: map[string]*spec{"": {name: "git remote", opts: flags("v", "verbose"), match: []string{"git remote -v", "git remote"}, notMatch: []string{"git remote add x y"}}, "get-url": {name: "git remote get-url", operands: kAny, maxOps: 1, opts: flags("", "push", "all"), match: []string{"git remote get-url origin"}, notMatch: []string{"git remote get-url a b"}}}, opts: flags("v", "verbose"), match: []string{"git remote -v"}, notMatch: []string{"git remote remove origin"}},
		"stash":         {name: "git stash", subs: map[string]*spec{"list": {name: "git stash list", opts: logOpts, match: []string{"git stash list"}, notMatch: []string{"git stash list --output=x"}}, "show": {name: "git stash show", operands: kAny, maxOps: 1, opts: diffOpts, match: []string{"git stash show -p"}, notMatch: []string{"git stash show --ext-diff"}}}, match: []string{"git stash list"}, notMatch: []string{"git stash pop"}},
		"config":        {name: "git config", operands: kAny, opts: cat(flags("lz", "get", "get-all", "get-regexp", "get-urlmatch", "list", "local", "worktree", "global", "system", "show-origin", "show-scope", "name-only", "null", "bool", "int", "bool-or-int", "path", "expiry-date", "includes", "no-includes"), []opt{o(kAny, "--type", "--default", "--blob"), o(kPath, "-f", "--file")}), check: checkGitConfig, match: []string{"git config --get user.name", "git config --list", "git config -l --show-origin"}, notMatch: []string{"git config user.name x", "git config --unset x"}},
		"version":       {name: "git version", opts: flags("", "build-options"), match: []string{"git version"}, notMatch: []string{"git version x"}},
		"merge-base":    {name: "git merge-base", operands: kAny, opts: flags("a", "all", "octopus", "independent", "is-ancestor", "fork-point"), match: []string{"git merge-base main HEAD"}, notMatch: []string{"git merge-base --x"}},
		"name-rev":      {name: "git name-rev", operands: kAny, opts: cat(flags("", "name-only", "tags", "all", "no-undefined", "always", "annotate-stdin"), []opt{o(kAny, "--refs", "--exclude")}), match: []string{"git name-rev HEAD"}, notMatch: []string{"git name-rev --x"}},
		"count-objects": {name: "git count-objects", opts: flags("vH", "verbose", "human-readable"), match: []string{"git count-objects -vH"}, notMatch: []string{"git count-objects x"}},
		"show-ref":      {name: "git show-ref", operands: kAny, opts: cat(flags("dsq", "head", "heads", "tags", "branches", "dereference", "verify", "exists", "quiet"), []opt{{names: []string{"--hash", "--abbrev"}, arg: kAny, optional: true}}), match: []string{"git show-ref --tags"}, notMatch: []string{"git show-ref --exclude-existing"}},
		"for-each-ref":  {name: "git for-each-ref", operands: kAny, opts: cat(flags("spP", "shell", "perl", "python", "tcl", "ignore-case", "omit-empty", "include-root-refs"), []opt{o(kAny, "--format", "--sort", "--count", "--points-at", "--merged", "--no-merged", "--contains", "--no-contains", "--exclude")}), match: []string{"git for-each-ref --format='%(refname)' refs/heads"}, notMatch: []string{"git for-each-ref --stdin x"}},
		"check-ignore":  {name: "git check-ignore", operands: kAny, opts: flags("qvnz", "quiet", "verbose", "non-matching", "no-index"), check: checkGitPaths, match: []string{"git check-ignore -v x"}, notMatch: []string{"git check-ignore --stdin"}},
	}}

// goFlags are go's value-less flags, written -name or --name.
func goFlags(names ...string) []opt {
	var out []opt
	for _, n := range names {
		out = append(out, opt{names: []string{"-" + n, "--" + n}})
	}
	return out
}

var goSpec = &spec{name: "go", unlisted: Dangerous, match: []string{"go version", "go env GOPATH"}, notMatch: []string{"go run .", "go generate"}, subs: map[string]*spec{
	"version": {name: "go version", operands: kPath, opts: goFlags("m", "v"), match: []string{"go version"}, notMatch: []string{"go version -x"}},
	"env":     {name: "go env", operands: kAny, opts: cat(goFlags("json", "changed"), []opt{danger("writes go's configuration", kNone, "-w", "-u")}), match: []string{"go env GOPATH", "go env"}, notMatch: []string{"go env -w GOFLAGS=-x"}},
	"list":    {name: "go list", operands: kAny, opts: cat(goFlags("m", "e", "deps", "test", "find", "retracted", "reuse"), []opt{{names: []string{"-json", "--json"}, arg: kAny, optional: true}, o(kAny, "-f", "--f", "-tags", "--tags")}), match: []string{"go list ./...", "go list -m all", "go list -f '{{.Dir}}' ./..."}, notMatch: []string{"go list -toolexec x ./..."}},
	"doc":     {name: "go doc", operands: kAny, opts: goFlags("all", "short", "src", "u", "c", "cmd", "http"), match: []string{"go doc fmt.Println"}, notMatch: []string{"go doc -x"}},
}}

var kubeDanger = []opt{
	danger("sends the kubeconfig's credentials to another server", kAny, "-s", "--server"),
	danger("reads a kubeconfig that can run credential plugins", kAny, "--kubeconfig"),
	danger("acts with other credentials", kAny, "--token", "--as", "--as-group", "--as-uid", "--username", "--password", "--client-certificate", "--client-key", "--certificate-authority", "--tls-server-name"),
	{names: []string{"--insecure-skip-tls-verify"}, arg: kAny, optional: true, danger: "turns off server certificate checks"},
	danger("writes a cache in another directory", kAny, "--cache-dir"),
}

var kubeRead = cat(flags("Aw", "all-namespaces", "watch", "watch-only", "show-labels", "no-headers", "show-kind", "ignore-not-found", "show-managed-fields", "chunk-size", "raw", "recursive", "show-events"),
	[]opt{o(kAny, "-n", "--namespace", "-o", "--output", "-l", "--selector", "--field-selector", "--sort-by", "--context", "--cluster", "--user", "-L", "--label-columns", "--template", "--subresource", "--request-timeout", "-v")},
	kubeDanger)

var kubectlSpec = &spec{name: "kubectl", unlisted: Dangerous, match: []string{"kubectl get pods"}, notMatch: []string{"kubectl delete pod x"}, opts: cat([]opt{o(kAny, "-n", "--namespace", "--context", "--cluster", "--user", "--request-timeout", "-v")}, kubeDanger), subs: map[string]*spec{
	"get":      {name: "kubectl get", operands: kAny, opts: kubeRead, match: []string{"kubectl get pods", "kubectl get pods -n x -o wide"}, notMatch: []string{"kubectl get pods --kubeconfig=./k", "kubectl get pods -s http://x"}},
	"describe": {name: "kubectl describe", operands: kAny, opts: kubeRead, match: []string{"kubectl describe pod x"}, notMatch: []string{"kubectl describe --server=http://elsewhere pod x"}},
}}

var dockerSpec = &spec{name: "docker", unlisted: Dangerous, match: []string{"docker ps"}, notMatch: []string{"docker run x", "docker -H tcp://x ps"}, opts: cat(flags("D", "debug"), []opt{o(kAny, "-l", "--log-level"),
	danger("talks to another docker daemon", kAny, "-H", "--host", "-c", "--context"), danger("reads another client configuration", kAny, "--config")}), subs: map[string]*spec{
	"ps":      {name: "docker ps", opts: cat(flags("aqsl", "all", "quiet", "size", "latest", "no-trunc"), []opt{o(kAny, "--format", "-f", "--filter"), o(kNum, "-n", "--last")}), match: []string{"docker ps", "docker ps -a --format '{{.Names}}'"}, notMatch: []string{"docker ps --x"}},
	"images":  {name: "docker images", operands: kAny, maxOps: 1, opts: cat(flags("aq", "all", "quiet", "digests", "no-trunc", "tree"), []opt{o(kAny, "--format", "-f", "--filter")}), match: []string{"docker images"}, notMatch: []string{"docker images --x"}},
	"version": {name: "docker version", opts: []opt{o(kAny, "-f", "--format")}, match: []string{"docker version"}, notMatch: []string{"docker version x"}},
}}

var pipSpec = &spec{name: "pip", unlisted: Dangerous, match: []string{"pip list"}, notMatch: []string{"pip uninstall x"}, opts: flags("V", "version", "help"), subs: map[string]*spec{
	"":       {name: "pip", opts: flags("V", "version"), match: []string{"pip --version"}, notMatch: []string{"pip --x"}},
	"list":   {name: "pip list", opts: cat(flags("lueo", "local", "user", "uptodate", "outdated", "editable", "not-required", "exclude-editable", "include-editable", "pre"), []opt{o(kAny, "--format")}), match: []string{"pip list", "pip list --format=json"}, notMatch: []string{"pip list --index-url http://x"}},
	"show":   {name: "pip show", operands: kAny, opts: flags("f", "files", "verbose"), match: []string{"pip show requests"}, notMatch: []string{"pip show --x"}},
	"freeze": {name: "pip freeze", opts: flags("l", "local", "user", "all", "exclude-editable"), match: []string{"pip freeze"}, notMatch: []string{"pip freeze -r x"}},
}}

var npmSpec = &spec{name: "npm", unlisted: Dangerous, match: []string{"npm ls"}, notMatch: []string{"npm exec x"}, opts: flags("v", "version"), subs: map[string]*spec{
	"":     {name: "npm", opts: flags("v", "version"), match: []string{"npm --version"}, notMatch: []string{"npm --x"}},
	"ls":   {name: "npm ls", operands: kAny, opts: cat(flags("alpg", "all", "json", "long", "parseable", "prod", "dev", "link", "global", "production"), []opt{o(kAny, "--depth", "--omit", "--include")}), match: []string{"npm ls", "npm ls --depth=0"}, notMatch: []string{"npm ls --x"}},
	"list": {name: "npm list", operands: kAny, opts: cat(flags("alpg", "all", "json", "long", "parseable", "prod", "dev", "link", "global", "production"), []opt{o(kAny, "--depth", "--omit", "--include")}), match: []string{"npm list"}, notMatch: []string{"npm list --x"}},
}}

// versionOnly are compilers and interpreters whose version query is safe;
// anything else they are given runs code.
func versionOnly(name string, short ...string) *spec {
	return &spec{name: name, unlisted: Dangerous, opts: flags(strJoin(short), "version"), check: checkVersion,
		match: []string{name + " --version"}, notMatch: []string{name + " x", name}}
}

// checkVersion: a version query must ask for the version.
func checkVersion(j *judge, p *parsed, r *res) {
	if len(p.opts) == 0 {
		r.unlisted(Dangerous, p.s.name+" without --version runs a program")
	}
}

func strJoin(ss []string) string {
	out := ""
	for _, s := range ss {
		out += s
	}
	return out
}

var versionSpecs = []*spec{
	versionOnly("cargo", "V"), versionOnly("rustc", "V"), versionOnly("node", "v"), versionOnly("nodejs", "v"), versionOnly("python", "V"),
	versionOnly("python3", "V"), versionOnly("python2", "V"), versionOnly("deno"), versionOnly("ruby", "v"), versionOnly("java"), versionOnly("gcc"), versionOnly("clang"),
	versionOnly("tsc", "v"), versionOnly("bun"), versionOnly("php", "v"), versionOnly("perl", "v"), versionOnly("lua", "v"),
}

// specs maps a command name to its spec (filled by init: the tables'
// checks reach the judge, which reads specs).
var specs = map[string]*spec{}

// allSpecs lists every top-level spec.
func allSpecs() []*spec {
	var out []*spec
	for _, list := range [][]*spec{readers, listers, informers, shellSafe, searchers, versionSpecs} {
		out = append(out, list...)
	}
	return append(out, gitSpec, goSpec, kubectlSpec, dockerSpec, pipSpec, npmSpec)
}

func init() {
	for _, s := range allSpecs() {
		specs[s.name] = s
	}
	specs["pip3"] = pipSpec
}
