package shellpolicy

import (
	"strings"
)

// devList are commands that build, test and edit the project, as word
// sequences matched against argv (never string prefixes: lsblk is not ls).
// A trailing "$" means the argv must end there. They start from seed 000's
// DEV_PREFIXES.
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
	"git pull", "git merge", "git rebase", "git init", "git mv", "git rm", "git cherry-pick", "git branch", "git tag",
}

type entry struct {
	words []string
	exact bool
	class Class
}

type tables struct {
	user map[string][]entry
}

var devTable = func() map[string][]entry {
	m := map[string][]entry{}
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

// matchEntries finds the longest entry whose words start words.
func matchEntries(es []entry, words []string) (entry, bool) {
	var best entry
	found := false
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
	return best, found
}

// gitWords drops git's global options so that "git -C x commit" matches
// the dev entry "git commit".
func gitWords(words []string) []string {
	if len(words) == 0 || words[0] != "git" {
		return words
	}
	k := 1
	for k < len(words) && strings.HasPrefix(words[k], "-") {
		if words[k] == "-C" || words[k] == "-c" || words[k] == "--namespace" || words[k] == "--git-dir" || words[k] == "--work-tree" {
			k++
		}
		k++
	}
	return append([]string{"git"}, words[min(k, len(words)):]...)
}

// classify gives the class of one unwrapped argv: the user's entries, the
// safe specs, the dev table, else Dangerous.
func (j *judge) classify(base string, argv []arg, ctx *callCtx, r *res) {
	words := make([]string, 0, len(argv))
	words = append(words, base)
	for _, a := range argv[1:] {
		words = append(words, a.val)
	}
	if j.tables.user != nil {
		if e, ok := matchEntries(j.tables.user[base], words); ok {
			name := strings.Join(e.words, " ")
			if e.class == Safe {
				r.worse(Safe, "safe by configuration: "+name)
				for _, a := range argv[len(e.words):] {
					if strings.HasPrefix(a.val, "-") && !strings.Contains(a.val, "=") {
						continue
					}
					v := a
					if k := strings.IndexByte(a.val, '='); k >= 0 && strings.HasPrefix(a.val, "-") {
						v.val = a.val[k+1:]
					}
					if looksLikePath(v.val) || v.hasHole() {
						if c, why := j.readPath(v, name+" "); c > Safe {
							r.worse(c, why)
						}
					}
				}
				return
			}
			r.worse(e.class, "dev by configuration: "+name)
			return
		}
	}
	s := specs[base]
	var sr res
	if s != nil {
		j.judgeSpec(s, base, argv, &sr)
		if sr.class == Safe && sr.unl == Safe && sr.rule == "" {
			*r = mergeSpec(*r, sr)
			return
		}
	}
	if e, ok := matchEntries(devTable[base], gitWords(words)); ok {
		r.worse(Dev, "known dev command: "+strings.Join(e.words, " "))
		if s != nil && sr.class > Dev {
			r.worse(sr.class, sr.why)
		}
		if sr.rule != "" {
			r.merge(sr)
		}
		return
	}
	if s != nil {
		if sr.unl > sr.class {
			sr.class, sr.why = sr.unl, sr.unlWhy
		}
		*r = mergeSpec(*r, sr)
		return
	}
	r.worse(Dangerous, "not a known safe or dev command: "+base)
}

// mergeSpec folds a spec's judgement into r.
func mergeSpec(r, sr res) res {
	r.merge(sr)
	r.quiet = r.quiet || sr.quiet
	r.sink = r.sink || sr.sink
	if sr.cwd != nil {
		r.cwd = sr.cwd
	}
	return r
}

// looksLikePath reports a word that names a path (for user safe entries,
// whose operands warden does not know).
func looksLikePath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, ".") || strings.Contains(s, "/") || strings.ContainsAny(s, "*?[")
}
