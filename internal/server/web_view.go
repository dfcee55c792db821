package server

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden/internal/store"
)

// riskLine is one line of a request's risk summary, with the kind the page
// colours it by: a unified diff's file, hunk, add, del and context lines,
// or a command summary's class line and simple commands (Badge is the
// command's class).
type riskLine struct {
	Kind  string // file | hunk | add | del | ctx | class | cmd | text
	Badge string
	Text  string
}

// cmdLine is one simple command of the shell policy's summary:
// "  <class> <text>  (<rule>)".
var cmdLine = regexp.MustCompile(`^  ([a-z][a-z_-]*)\s+(\S.*)$`)

// hunkHeader is a unified diff hunk header: "@@ -a[,b] +c[,d] @@".
var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@`)

// riskLines splits the risk summary (written by the tools, carrying the
// agent's text: untrusted) into classified lines. It only classifies: the
// text of every line is kept whole, and html/template escapes it. Inside a
// hunk, the header's line counts say which lines are the hunk's, so a
// deleted "-- x" line is not taken for a "--- " file header.
func riskLines(risk string) []riskLine {
	if risk == "" {
		return nil
	}
	lines := strings.Split(strings.TrimRight(risk, "\n"), "\n")
	out := make([]riskLine, 0, len(lines))
	inDiff := false
	oldLeft, newLeft := 0, 0 // lines of the current hunk still to come
	for _, l := range lines {
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(l, "-") && oldLeft > 0:
				oldLeft--
				out = append(out, riskLine{Kind: "del", Text: l})
				continue
			case strings.HasPrefix(l, "+") && newLeft > 0:
				newLeft--
				out = append(out, riskLine{Kind: "add", Text: l})
				continue
			case (strings.HasPrefix(l, " ") || l == "") && oldLeft > 0 && newLeft > 0:
				oldLeft--
				newLeft--
				out = append(out, riskLine{Kind: "ctx", Text: l})
				continue
			case strings.HasPrefix(l, `\`): // "\ No newline at end of file"
				out = append(out, riskLine{Kind: "ctx", Text: l})
				continue
			}
			oldLeft, newLeft = 0, 0 // the counts were wrong: classify by prefix
		}
		switch {
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ "):
			inDiff = true
			out = append(out, riskLine{Kind: "file", Text: l})
		case strings.HasPrefix(l, "@@"):
			inDiff = true
			if m := hunkHeader.FindStringSubmatch(l); m != nil {
				oldLeft, newLeft = hunkCount(m[1]), hunkCount(m[2])
			}
			out = append(out, riskLine{Kind: "hunk", Text: l})
		case inDiff && strings.HasPrefix(l, "+"):
			out = append(out, riskLine{Kind: "add", Text: l})
		case inDiff && strings.HasPrefix(l, "-"):
			out = append(out, riskLine{Kind: "del", Text: l})
		case inDiff:
			out = append(out, riskLine{Kind: "ctx", Text: l})
		case strings.HasPrefix(l, "class: "):
			out = append(out, riskLine{Kind: "class", Text: l})
		default:
			if m := cmdLine.FindStringSubmatch(l); m != nil {
				out = append(out, riskLine{Kind: "cmd", Badge: m[1], Text: m[2]})
				continue
			}
			out = append(out, riskLine{Kind: "text", Text: l})
		}
	}
	return out
}

// hunkCount is a hunk header's line count: absent means 1; huge counts
// are capped (the loop consumes at most the lines there are anyway).
func hunkCount(s string) int {
	if s == "" {
		return 1
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
		if n > 1<<30 {
			return 1 << 30
		}
	}
	return n
}

// historyScan is how many of the latest audit rows the history filters
// read; historyShow is how many matches it shows.
const (
	historyScan = 5000
	historyShow = 200
)

// historyQuery is the history page's search: every field optional.
type historyQuery struct {
	Tool, Decision, By, Event string
	From, To                  string // as typed (datetime-local, UTC)
	from, to                  time.Time
}

const localTime = "2006-01-02T15:04"

// parseHistoryQuery reads the search form. Times are UTC, as
// datetime-local inputs send them ("2006-01-02T15:04", seconds optional).
func parseHistoryQuery(v url.Values) (historyQuery, error) {
	clip := func(s string) string {
		s = strings.TrimSpace(s)
		if len(s) > 200 {
			s = s[:200]
		}
		return s
	}
	q := historyQuery{Tool: clip(v.Get("tool")), Decision: clip(v.Get("decision")), By: clip(v.Get("by")),
		Event: clip(v.Get("event")), From: clip(v.Get("from")), To: clip(v.Get("to"))}
	var errs []string
	parse := func(name, s string) time.Time {
		if s == "" {
			return time.Time{}
		}
		for _, layout := range []string{localTime, localTime + ":05", time.RFC3339, "2006-01-02"} {
			if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
				return t
			}
		}
		errs = append(errs, fmt.Sprintf("%s: %q is not a time (want YYYY-MM-DDTHH:MM, UTC)", name, s))
		return time.Time{}
	}
	q.from, q.to = parse("from", q.From), parse("to", q.To)
	if len(errs) > 0 {
		return q, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return q, nil
}

func (q historyQuery) match(r *store.AuditRow) bool {
	rec := &r.Record
	eq := func(want, got string) bool { return want == "" || strings.EqualFold(want, got) }
	return eq(q.Tool, rec.Tool) && eq(q.Decision, string(rec.Decision)) && eq(q.By, rec.DecidedBy) && eq(q.Event, rec.Event) &&
		(q.from.IsZero() || !r.Time.Before(q.from)) && (q.to.IsZero() || r.Time.Before(q.to))
}

// filter returns the matching rows, newest first, at most historyShow, and
// whether more matched.
func (q historyQuery) filter(rows []*store.AuditRow) ([]*store.AuditRow, bool) {
	var out []*store.AuditRow
	for _, r := range slices.Backward(rows) {
		if !q.match(r) {
			continue
		}
		if len(out) == historyShow {
			return out, true
		}
		out = append(out, r)
	}
	return out, false
}
