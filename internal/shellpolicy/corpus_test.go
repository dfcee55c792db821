package shellpolicy

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// corpusRow is one line of testdata/attacks.jsonl or testdata/benign.jsonl.
type corpusRow struct {
	Cmd  string `json:"cmd"`
	Want string `json:"want"` // deny | safe | dev | dangerous
	Rule string `json:"rule,omitempty"`
	Why  string `json:"why"`
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

func checkRow(t *testing.T, r corpusRow) {
	t.Helper()
	v := Judge(r.Cmd, nil)
	switch r.Want {
	case "deny":
		if !v.Blocked {
			t.Errorf("%q: not blocked (class %s), want rule %s — %s\n%s", r.Cmd, v.Class, r.Rule, r.Why, dump(v))
		} else if r.Rule != "" && v.Rule != r.Rule {
			t.Errorf("%q: blocked by %s (%s), want rule %s", r.Cmd, v.Rule, v.Reason, r.Rule)
		}
	default:
		var want Class
		if err := want.UnmarshalText([]byte(r.Want)); err != nil {
			t.Fatalf("%q: %v", r.Cmd, err)
		}
		if v.Blocked {
			t.Errorf("%q: blocked by %s at %s (%s), want class %s — %s", r.Cmd, v.Rule, v.Pos, v.Reason, want, r.Why)
		} else if v.Class != want {
			t.Errorf("%q: class %s, want %s — %s\n%s", r.Cmd, v.Class, want, r.Why, dump(v))
		}
	}
}

func dump(v *Verdict) string {
	b, _ := json.MarshalIndent(v.Commands, "  ", " ")
	return "  " + string(b)
}

func TestAttackCorpus(t *testing.T) {
	t.Parallel()
	rows := readCorpus(t, "testdata/attacks.jsonl")
	if len(rows) < 150 {
		t.Errorf("attack corpus has %d rows, want at least 150", len(rows))
	}
	for _, r := range rows {
		checkRow(t, r)
	}
}

func TestBenignCorpus(t *testing.T) {
	t.Parallel()
	rows := readCorpus(t, "testdata/benign.jsonl")
	if len(rows) < 80 {
		t.Errorf("benign corpus has %d rows, want at least 80", len(rows))
	}
	for _, r := range rows {
		checkRow(t, r)
	}
}
