package command

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzCutter feeds a command's output, in arbitrary writes, to the cutter:
// what it keeps is bounded, its head is a prefix of the output and its tail
// a suffix (lines cut at maxLineBytes aside), and the lines it says it cut
// are the lines missing.
func FuzzCutter(f *testing.F) {
	f.Add([]byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"), uint8(4), uint16(64), uint8(3))
	f.Add([]byte(strings.Repeat("x", 40000)+"\ny\n"), uint8(2), uint16(100), uint8(7))
	f.Add([]byte("no newline"), uint8(1), uint16(8), uint8(1))
	f.Add([]byte("\n\n\n"), uint8(0), uint16(0), uint8(0))
	// A line too long for the tail ends it (found by this target).
	f.Add([]byte("\n\n00"), uint8(11), uint16(1), uint8(0))
	f.Fuzz(checkCutter)
}

func checkCutter(t *testing.T, out []byte, maxLines uint8, maxBytes uint16, chunk uint8) {
	capB := int(maxBytes) + 2
	c := newCutter(int(maxLines), capB)
	step := int(chunk) + 1
	for i := 0; i < len(out); i += step {
		c.Write(out[i:min(i+step, len(out))])
	}
	got, cut := c.result()
	if cut < 0 {
		t.Fatalf("cut %d lines", cut)
	}
	// Each kept line is at most maxLineBytes plus its cut note; the
	// head and the tail each hold at most half the byte bound (or one
	// cut line each, when the bound is smaller than a line).
	if limit := capB + 2*(maxLineBytes+64) + 64; len(got) > limit {
		t.Fatalf("kept %d bytes of %d, bound %d", len(got), len(out), limit)
	}
	if cut == 0 {
		// Nothing cut and no line too long: the output is kept whole.
		long := false
		for _, l := range bytes.SplitAfter(out, []byte("\n")) {
			if len(bytes.TrimSuffix(l, []byte("\n"))) > maxLineBytes {
				long = true
			}
		}
		if !long && got != string(out) {
			t.Fatalf("nothing cut, but %q became %q", out, got)
		}
	}
	marker := "lines cut ...]\n"
	if cut > 0 {
		i := strings.Index(got, "[... ")
		if i < 0 || !strings.Contains(got, marker) {
			t.Fatalf("%d lines cut without a marker: %q", cut, got)
		}
		head := got[:i]
		tail := got[strings.Index(got, marker)+len(marker):]
		if !strings.Contains(head, " bytes of this line cut") && !bytes.HasPrefix(out, []byte(head)) && !bytes.HasPrefix(out, []byte(strings.TrimSuffix(head, "\n"))) {
			t.Fatalf("head %q is not a prefix of the output", head)
		}
		if !strings.Contains(tail, " bytes of this line cut") && !bytes.HasSuffix(out, []byte(tail)) {
			t.Fatalf("tail %q is not a suffix of the output", tail)
		}
		lines := bytes.Count(out, []byte("\n"))
		if len(out) > 0 && out[len(out)-1] != '\n' {
			lines++
		}
		kept := strings.Count(head, "\n") + strings.Count(tail, "\n")
		if len(tail) > 0 && tail[len(tail)-1] != '\n' {
			kept++
		}
		if kept+cut != lines {
			t.Fatalf("%d lines, %d kept, %d said cut: %q", lines, kept, cut, got)
		}
	}
}

// ReadFrom (the path os/exec takes, through io.Copy) keeps what Write
// keeps, in whatever pieces the reader returns, and passes on a read error.
func TestCutterReadFrom(t *testing.T) {
	out := []byte(strings.Repeat("line of output\n", 5000) + strings.Repeat("y", 70000) + "\nlast")
	want := newCutter(100, 1<<20)
	want.Write(out)
	for _, r := range []io.Reader{bytes.NewReader(out), iotest.OneByteReader(bytes.NewReader(out)), iotest.HalfReader(bytes.NewReader(out))} {
		c := newCutter(100, 1<<20)
		n, err := io.Copy(c, r)
		if err != nil || n != int64(len(out)) {
			t.Fatalf("io.Copy = %d, %v; want %d, nil", n, err, len(out))
		}
		got, gotCut := c.result()
		w, wCut := want.result()
		if got != w || gotCut != wCut {
			t.Errorf("ReadFrom kept %d bytes (%d lines cut), Write %d (%d)", len(got), gotCut, len(w), wCut)
		}
	}
	boom := errors.New("boom")
	if _, err := newCutter(0, 1<<20).ReadFrom(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("ReadFrom of a failing reader: %v, want %v", err, boom)
	}
}
