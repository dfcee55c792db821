package approval

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzPrintableLines: whatever an agent sends, the text shown as a block
// is valid UTF-8 and holds no control character but newline and tab (no
// carriage return, no escape sequence, no bidirectional override), and no
// line separator a client could break a line on; Printable holds no
// newline either.
func FuzzPrintableLines(f *testing.F) {
	for _, s := range []string{"", "a\nb", "a\r\nb\rc", "\x1b[2K", "\u202eevil", "\xff\xfe", "x\u2028y", "```\n*Tool*", "\t\tindent\n"} {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			max = 0
		}
		for _, lines := range []bool{true, false} {
			var out string
			if lines {
				out = PrintableLines(s, max)
			} else {
				out = Printable(s, max)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 from %q: %q", s, out)
			}
			for _, r := range out {
				if r == '\n' || r == '\t' {
					if !lines {
						t.Fatalf("Printable kept %q in %q", r, out)
					}
					continue
				}
				if unicode.IsControl(r) || isBidi(r) || r == '\u2028' || r == '\u2029' {
					t.Fatalf("control or bidi rune %U kept from %q: %q", r, s, out)
				}
			}
			if lines && strings.HasSuffix(out, "\n") {
				t.Fatalf("trailing newline kept: %q", out)
			}
		}
	})
}
