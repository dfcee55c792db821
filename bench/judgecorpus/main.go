// Command judgecorpus runs the command judge's test corpora and prints,
// for each row, what the judge decided: blocked (with the rule), or its
// class. bench/judge-corpus.sh builds it against two versions of the judge
// and compares their outputs (false-ask rate on the benign corpus, the
// result of every attack row).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/wardenhq/warden/internal/shellpolicy"
)

type row struct {
	Cmd    string `json:"cmd"`
	Want   string `json:"want"`
	Jailed string `json:"jailed,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Why    string `json:"why"`
}

type result struct {
	Cmd      string `json:"cmd"`
	Want     string `json:"want"`
	WantJail string `json:"want_jail,omitempty"`
	Why      string `json:"why"`
	Host     string `json:"host"`
	Jail     string `json:"jail,omitempty"`
}

func main() {
	corpus := flag.String("corpus", "", "a JSON-lines corpus (testdata/attacks.jsonl or benign.jsonl)")
	cmp := flag.String("compare", "", "benign|attacks: compare two result files (the arguments, old then new)")
	flag.Parse()
	if *cmp != "" {
		if flag.NArg() != 2 {
			fmt.Fprintln(os.Stderr, "judgecorpus: -compare needs the old and the new results")
			os.Exit(2)
		}
		if err := compare(os.Stdout, *cmp, flag.Arg(0), flag.Arg(1)); err != nil {
			fmt.Fprintln(os.Stderr, "judgecorpus:", err)
			os.Exit(1)
		}
		return
	}
	f, err := os.Open(*corpus)
	if err != nil {
		fmt.Fprintln(os.Stderr, "judgecorpus:", err)
		os.Exit(1)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	enc := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintln(os.Stderr, "judgecorpus:", err)
			os.Exit(1)
		}
		host := decision(shellpolicy.Judge(r.Cmd, judgeOptions(false)))
		out := result{Cmd: r.Cmd, Want: r.Want, WantJail: r.Jailed, Why: r.Why, Host: host}
		if o := judgeOptions(true); o != nil {
			out.Jail = decision(shellpolicy.Judge(r.Cmd, o))
		}
		enc.Encode(out)
	}
}

func decision(v *shellpolicy.Verdict) string {
	if v.Blocked {
		return "deny:" + v.Rule
	}
	return v.Class.String()
}
