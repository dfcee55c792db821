package checkpoint

import (
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// DefaultIgnore are trees a checkpoint skips unless the configuration takes
// them back ("!node_modules/"): dependency and tool caches that are large,
// churn often and are rebuilt by a command rather than written by hand.
// Build outputs of a project are usually in its .gitignore, which is
// honoured too.
var DefaultIgnore = []string{
	"node_modules/", ".venv/", "__pycache__/", ".tox/", ".nox/",
	".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".gradle/",
	".next/", ".nuxt/", ".turbo/", ".parcel-cache/", ".terraform/",
}

// An ignoreRule is one gitignore line. Patterns without a slash match an
// entry's own name, as git matches them (the most common kind, "*.o" or
// "node_modules/", is tested without a glob engine); patterns with a slash
// are matched by go-git's gitignore package against the path from the
// directory of the file that holds them.
type ignoreRule struct {
	negate  bool
	dirOnly bool
	how     matchHow
	lit     string            // name, or suffix for matchSuffix
	pat     gitignore.Pattern // matchPath
}

type matchHow uint8

const (
	matchName matchHow = iota
	matchSuffix
	matchGlob
	matchPath
)

// parseIgnore parses the lines of a .gitignore in the directory domain
// (nil for the workspace root).
func parseIgnore(data string, domain []string) []ignoreRule {
	var rules []ignoreRule
	for _, line := range strings.Split(data, "\n") {
		if r, ok := parseIgnoreLine(strings.TrimSuffix(line, "\r"), domain); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

func parseIgnoreLine(line string, domain []string) (ignoreRule, bool) {
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	var r ignoreRule
	p := line
	if strings.HasPrefix(p, "!") {
		r.negate, p = true, p[1:]
	} else if strings.HasPrefix(p, `\#`) || strings.HasPrefix(p, `\!`) {
		p = p[1:]
	}
	if !strings.HasSuffix(p, `\ `) {
		p = strings.TrimRight(p, " ")
	}
	if strings.HasSuffix(p, "/") {
		r.dirOnly, p = true, strings.TrimSuffix(p, "/")
	}
	if p == "" {
		return ignoreRule{}, false
	}
	const meta = `*?[\`
	switch {
	case strings.Contains(p, "/"):
		// go-git reads the negation and the trailing slash itself; give it
		// the line with escapes and trailing spaces already handled.
		full := p
		if r.dirOnly {
			full += "/"
		}
		if r.negate {
			full = "!" + full
		}
		r.how, r.pat = matchPath, gitignore.ParsePattern(full, domain)
	case !strings.ContainsAny(p, meta):
		r.how, r.lit = matchName, p
	case p[0] == '*' && !strings.ContainsAny(p[1:], meta):
		r.how, r.lit = matchSuffix, p[1:]
	default:
		r.how, r.lit = matchGlob, p
	}
	return r, true
}

// ignored applies rules to the entry name of the directory dir (its
// components from the workspace root); the last rule that matches decides,
// as in git.
func ignored(rules []ignoreRule, dir []string, name string, isDir bool) bool {
	var comps []string // built only for a rule that needs the whole path
	for i := len(rules) - 1; i >= 0; i-- {
		r := &rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var hit bool
		switch r.how {
		case matchName:
			hit = name == r.lit
		case matchSuffix:
			hit = strings.HasSuffix(name, r.lit)
		case matchGlob:
			hit, _ = filepath.Match(r.lit, name)
		case matchPath:
			if comps == nil {
				comps = append(dir[:len(dir):len(dir)], name)
			}
			hit = r.pat.Match(comps, isDir) != gitignore.NoMatch
		}
		if hit {
			return !r.negate
		}
	}
	return false
}
