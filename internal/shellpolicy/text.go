package shellpolicy

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// echoText is the text echo or printf writes when the judge can know it:
// every argument known, and escapes read the way the dialect reads them
// (dash's echo interprets backslashes, bash's does not without -e; dash's
// printf has no \x).
func echoText(lang syntax.LangVariant, base string, args []arg) (string, bool) {
	for _, a := range args {
		if a.hasHole() {
			return "", false
		}
	}
	if base == "printf" {
		if len(args) == 0 || args[0].val == "-v" || strings.HasPrefix(args[0].val, "-") && args[0].val != "--" {
			return "", false
		}
		if args[0].val == "--" {
			args = args[1:]
		}
		if len(args) == 0 {
			return "", false
		}
		format := args[0].val
		if lang == syntax.LangPOSIX && strings.Contains(format, `\x`) {
			return "", false
		}
		vals := make([]string, len(args)-1)
		for k, a := range args[1:] {
			vals[k] = a.val
		}
		var b strings.Builder
		for {
			// Never a nil Config: mvdan.cc/sh then uses one shared
			// package-level Config (and its string builder), so two
			// judges running at once would read each other's text.
			s, n, err := expand.Format(&expand.Config{}, format, vals)
			if err != nil {
				return "", false
			}
			b.WriteString(s)
			if n == 0 || n >= len(vals) {
				break
			}
			vals = vals[n:]
			if b.Len() > MaxInputBytes {
				return "", false
			}
		}
		return b.String(), true
	}
	newline := true
	k := 0
	for ; k < len(args); k++ {
		v := args[k].val
		if len(v) < 2 || v[0] != '-' || strings.Trim(v[1:], "neE") != "" {
			break
		}
		if strings.ContainsRune(v, 'e') {
			return "", false
		}
		if strings.ContainsRune(v, 'n') {
			newline = false
		}
	}
	words := make([]string, 0, len(args)-k)
	for _, a := range args[k:] {
		if lang != syntax.LangBash && strings.ContainsRune(a.val, '\\') {
			return "", false
		}
		words = append(words, a.val)
	}
	s := strings.Join(words, " ")
	if newline {
		s += "\n"
	}
	return s, true
}
