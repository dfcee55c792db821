package shellpolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBashParamDisagreements: words whose value bash computes another
// way than mvdan.cc/sh's expander (patsub_replacement's &, backslashes in
// a replacement, arithmetic the expander reads as 0, a letter sequence
// crossing \ and `) are never read as the relative words the expander
// made of them.
func TestBashParamDisagreements(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"x=/etc/passwd; cat ${x/*/&}",
		`x=/etc/passwd; cat "${x/*/&}"`,
		"x=/etc/passwd; r='&'; cat ${x/*/$r}",
		"x=/etc/passwd; cat ${x//?/&}",
		`x=aetc/passwd; cat ${x/a/\/}`,
		"x=/etc/passwd; cat ${y:-${x/*/&}}",
		"s=ab/etc/passwd; o='1+1'; cat ${s:o}",
		"s=ab/etc/passwd; o='(2)'; cat ${s:$o}",
		"s=ab/etc/passwd; cat ${s:RANDOM%3}",
		"s=ab/etc/passwd; cat ${s:0:RANDOM}",
		"s=ab/etc/passwd; cat ${s:$((RANDOM))}",
		"s=abcd/etc/passwd; cat ${s:${#TERM}}",
		"s=ab/etc/passwd; n=$(wc -l < f); cat ${s:n}",
		"a=(x /etc/passwd); cat ${a[RANDOM%2]}",
		"a=(x /etc/passwd); i=j; j='0+1'; cat ${a[i]}",
		"x=/etc/passwd; cat ${x/*/${y:-&}}",
		"x=/etc/passwd; r='&'; cat \"${x/*/$r}\"",
		"cat {T..d..8}/etc/passwd",
		"cat {d..T..8}etc/passwd",
		"cat {Z..a}",
		"eval \"${x:-echo \\`touch PWNED\\`}\"",
		`cat ${0+a\"b} "${x:-a\\b}"`,
		"BASH_CMDS[cat]=/usr/bin/touch; cat PWNED",
		"printf -v 'BASH_CMDS[cat]' /usr/bin/touch; cat PWNED",
		"read 'BASH_CMDS[cat]' <<< /usr/bin/touch; cat PWNED",
		": ${BASH_CMDS[cat]:=/usr/bin/touch}; cat PWNED",
		"read 'PATH[0]' <<< /tmp; cat PWNED",
		"x=a/etc/passwd; cat ${x#[[=a=]]}",
		`x=a/etc/passwd; cat "${x/[[.a.]]}"`,
		"x=a/etc/passwd; p='[[=a=]]'; cat ${x#$p}",
		"x=a/etc/passwd; cat ${x#$TERM}",
		"x=a/etc/passwd; cat ${x%$(cat f)}",
		"sudo=1; ${!sud@} id",
		"x='a[0]'; a=(/etc/passwd); cat ${!x}",
		"declare -n r='a[0]'; a=(/etc/passwd); cat $r",
		"a[1]=/etc/passwd; cat ${a[1]}",
		"a=(x); a+=(/etc/passwd); cat ${a[1]}",
		`cat "${x:-'$(touch PWNED)'}"`,
		"cat \"${x:-'`touch PWNED`'}\"",
		"cat <<EOF\n${x:-'$(touch PWNED)'}\nEOF",
		`y=/etc/passwd; eval "${x:-'$y'}"`,
	} {
		if v := Judge(line, testOptions(false)); !v.Blocked && v.Class == Safe {
			t.Errorf("%q is safe\n%s", line, dump(v))
		}
	}
	for _, tc := range []struct {
		line string
		want []string // argv of the last command
	}{
		{`x=abc; cat ${x/a/b} ${x:1:1} ${x: -1} ${x//[ab]/z} ${x/b/'&'} ${x/b/"&"} ${x/b/$'\\'}`, []string{"cat", "bbc", "b", "c", "zzc", "a&c", "a&c", `a\c`}},
		{"a=(x y); i=1; cat ${a[1]} ${a[0+1]} ${a[i]} ${a[$i]}", []string{"cat", "y", "y", "y", "y"}},
		{"i=1; j=i; s=abc; cat ${s:i} ${s:j+1:1} ${s:0x1} ${s:$(echo 2)}", []string{"cat", "bc", "c", "bc", "c"}},
		{"cat {a..c} {C..A}", []string{"cat", "a", "b", "c", "C", "B", "A"}},
		{`cat $'\x{2f}etc' $'a\x{62}c' $'\x{12f}' $'x\x{}y' $'\x{2f'`, []string{"cat", "/etc", "abc", "/", "x", "/"}},
		{"cat $'\\c\x7f' $'\\c\x01' $'\\cA'", []string{"cat", "\x01\x7f", "\x01\x01", "\x01"}},
	} {
		v := Judge(tc.line, testOptions(false))
		runs, _ := v.Runs()
		if len(runs) == 0 {
			t.Errorf("%q: no runs\n%s", tc.line, dump(v))
			continue
		}
		if d := cmp.Diff(tc.want, runs[len(runs)-1]); d != "" {
			t.Errorf("%q: argv (-want +got):\n%s", tc.line, d)
		}
	}
}
