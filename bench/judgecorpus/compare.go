package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// compare reads the results of two versions on one corpus and writes a
// Markdown summary, then a table of every row.
func compare(w io.Writer, kind, oldPath, newPath string) error {
	olds, err := readResults(oldPath)
	if err != nil {
		return err
	}
	news, err := readResults(newPath)
	if err != nil {
		return err
	}
	if len(olds) != len(news) {
		return fmt.Errorf("%s has %d rows, %s %d", oldPath, len(olds), newPath, len(news))
	}
	switch kind {
	case "benign":
		var n, oldAsk, newAsk, nj, jailAsk int
		for i, o := range olds {
			nw := news[i]
			if nw.Want == "safe" {
				n++
				if o.Host != "safe" {
					oldAsk++
				}
				if nw.Host != "safe" {
					newAsk++
				}
			}
			if wantJail(nw) == "safe" {
				nj++
				if nw.Jail != "safe" {
					jailAsk++
				}
			}
		}
		fmt.Fprintf(w, "benign rows that must be safe on the host: %d; judged not safe: before %d (%.1f%%), after %d (%.1f%%)\n",
			n, oldAsk, pct(oldAsk, n), newAsk, pct(newAsk, n))
		fmt.Fprintf(w, "benign rows that must be safe in the jail: %d; judged not safe after: %d (%.1f%%)\n", nj, jailAsk, pct(jailAsk, nj))
		byDesign := 0
		for i, o := range olds {
			if o.Host == "safe" && news[i].Want != "safe" {
				byDesign++
			}
		}
		fmt.Fprintf(w, "benign rows safe before that are asked on the host by design (recursive readers, globs over masks, computed paths): %d\n", byDesign)
	case "attacks":
		tally := func(rs []result, jail bool) string {
			m := map[string]int{}
			for _, r := range rs {
				d := r.Host
				if jail {
					d = r.Jail
				}
				if strings.HasPrefix(d, "deny:") {
					d = "blocked"
				}
				m[d]++
			}
			return fmt.Sprintf("blocked %d, dangerous %d, dev %d, safe %d", m["blocked"], m["dangerous"], m["dev"], m["safe"])
		}
		fmt.Fprintf(w, "attack rows: %d\n  before: %s\n  after (host): %s\n  after (jail): %s\n", len(news), tally(olds, false), tally(news, false), tally(news, true))
		var wrongOld, wrongNew int
		for i := range olds {
			if !meets(olds[i].Host, news[i].Want) {
				wrongOld++
			}
			if !meets(news[i].Host, news[i].Want) {
				wrongNew++
			}
		}
		fmt.Fprintf(w, "  rows judged as the row expects: before %d of %d, after %d of %d\n", len(olds)-wrongOld, len(olds), len(news)-wrongNew, len(news))
		fam := map[string][2]int{}
		var fams []string
		for i := range olds {
			f := family(news[i].Why)
			if f == "" {
				continue
			}
			if _, ok := fam[f]; !ok {
				fams = append(fams, f)
			}
			c := fam[f]
			if meets(olds[i].Host, news[i].Want) {
				c[0]++
			}
			if meets(news[i].Host, news[i].Want) {
				c[1]++
			}
			fam[f] = c
		}
		sort.Strings(fams)
		for _, f := range fams {
			total := 0
			for i := range news {
				if family(news[i].Why) == f {
					total++
				}
			}
			fmt.Fprintf(w, "  %s: %d rows, as expected before %d, after %d\n", f, total, fam[f][0], fam[f][1])
		}
	}
	fmt.Fprintf(w, "\n| command | expected | before | after (host) | after (jail) |\n|---|---|---|---|---|\n")
	for i, o := range olds {
		nw := news[i]
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s |\n", cell(nw.Cmd), nw.Want, o.Host, nw.Host, nw.Jail)
	}
	return nil
}

func wantJail(r result) string {
	if r.WantJail != "" {
		return r.WantJail
	}
	return r.Want
}

// meets reports whether a decision is what a row expects.
func meets(d, want string) bool {
	switch want {
	case "deny":
		return strings.HasPrefix(d, "deny:")
	case "notsafe":
		return d == "dev" || d == "dangerous"
	}
	return d == want
}

func family(why string) string {
	if k := strings.Index(why, "issue 13 family "); k >= 0 {
		rest := why[k+len("issue 13 family "):]
		if e := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); e > 0 {
			return "issue 13 family " + rest[:e]
		}
	}
	return ""
}

func cell(s string) string {
	s = strings.NewReplacer("|", `\|`, "\n", `\n`, "\r", `\r`, "`", "'").Replace(s)
	return s
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func readResults(p string) ([]result, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
