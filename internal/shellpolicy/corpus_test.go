package shellpolicy

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/command"
)

// corpusRow is one line of testdata/attacks.jsonl or testdata/benign.jsonl.
type corpusRow struct {
	Cmd  string `json:"cmd"`
	Want string `json:"want"` // deny | safe | dev | dangerous | notsafe (dev or dangerous)
	// Jailed is what the row must judge under Options.Jailed, when it
	// differs from Want (mask checks relaxed there).
	Jailed string `json:"jailed,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Why    string `json:"why"`
}

func readCorpus(t testing.TB, name string) []corpusRow {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []corpusRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r corpusRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		if r.Cmd == "" || r.Want == "" || r.Why == "" {
			t.Fatalf("%s:%d: row needs cmd, want and why", name, n)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// runnerEnv are the names warden's runner passes to a command: what
// callers put in Options.EnvKnown.
func runnerEnv() []string {
	var names []string
	for _, kv := range command.Environ(nil, func(string) (string, bool) { return "x", true }) {
		names = append(names, kv[:strings.IndexByte(kv, '=')])
	}
	return names
}

// testOptions are the options warden's engine passes (on the host, or in
// the jail).
func testOptions(jailed bool) *Options {
	return &Options{EnvKnown: runnerEnv(), Jailed: jailed}
}

// wantFor is what a row expects in a mode.
func (r corpusRow) wantFor(jailed bool) string {
	if jailed && r.Jailed != "" {
		return r.Jailed
	}
	return r.Want
}

func checkRow(t *testing.T, r corpusRow, jailed bool) {
	t.Helper()
	v := Judge(r.Cmd, testOptions(jailed))
	mode := "host"
	if jailed {
		mode = "jail"
	}
	want := r.wantFor(jailed)
	switch want {
	case "deny":
		if !v.Blocked {
			t.Errorf("%s %q: not blocked (class %s), want rule %s — %s\n%s", mode, r.Cmd, v.Class, r.Rule, r.Why, dump(v))
		} else if r.Rule != "" && v.Rule != r.Rule {
			t.Errorf("%s %q: blocked by %s (%s), want rule %s", mode, r.Cmd, v.Rule, v.Reason, r.Rule)
		}
	case "notsafe":
		if v.Blocked || v.Class == Safe {
			t.Errorf("%s %q: blocked=%v class %s (%s), want dev or dangerous — %s\n%s", mode, r.Cmd, v.Blocked, v.Class, v.Reason, r.Why, dump(v))
		}
	default:
		var c Class
		if err := c.UnmarshalText([]byte(want)); err != nil {
			t.Fatalf("%q: %v", r.Cmd, err)
		}
		if v.Blocked {
			t.Errorf("%s %q: blocked by %s at %s (%s), want class %s — %s", mode, r.Cmd, v.Rule, v.Pos, v.Reason, c, r.Why)
		} else if v.Class != c {
			t.Errorf("%s %q: class %s, want %s — %s\n%s", mode, r.Cmd, v.Class, c, r.Why, dump(v))
		}
	}
}

func dump(v *Verdict) string {
	var b strings.Builder
	for _, s := range v.Commands {
		b.WriteString("    ")
		b.WriteString(strings.Repeat("  ", s.Depth))
		b.WriteString(s.Class.String() + " " + s.Dialect + " " + strings.Join(s.Argv, " ") + " — " + s.Why + "\n")
	}
	return b.String()
}

func TestAttackCorpus(t *testing.T) {
	t.Parallel()
	rows := readCorpus(t, "testdata/attacks.jsonl")
	if len(rows) < 500 {
		t.Errorf("attack corpus has %d rows, want at least 500", len(rows))
	}
	for _, jailed := range []bool{false, true} {
		for _, r := range rows {
			checkRow(t, r, jailed)
		}
	}
}

func TestBenignCorpus(t *testing.T) {
	t.Parallel()
	rows := readCorpus(t, "testdata/benign.jsonl")
	if len(rows) < 200 {
		t.Errorf("benign corpus has %d rows, want at least 200", len(rows))
	}
	for _, jailed := range []bool{false, true} {
		for _, r := range rows {
			checkRow(t, r, jailed)
		}
	}
}
