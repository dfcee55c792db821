package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The store's formats are parsed strictly: any input either decodes to
// something that encodes back to the same bytes, or fails with ErrCorrupt.
// Never a panic, never a lenient reading that a restore would act on.

func FuzzTree(f *testing.F) {
	f.Add(encodeTree(nil))
	f.Add(encodeTree([]entry{
		{name: "a", kind: kindFile, perm: 0o644, size: 3, hash: hashOf([]byte("abc"))},
		{name: "d", kind: kindDir, perm: 0o755, hash: hashOf([]byte("tree"))},
		{name: "l", kind: kindLink, perm: 0o777, size: 4, hash: hashOf([]byte("/etc"))},
		{name: ".env", kind: kindMasked},
		{name: "big", kind: kindTooBig, size: 1 << 40},
		{name: "fifo", kind: kindOther},
		{name: "h", kind: kindHardLink, size: 9},
		{name: "busy", kind: kindBusy, size: 1},
		{name: "日本 語\t", kind: kindFile, perm: 0o600, hash: hashOf(nil)},
	}))
	f.Add([]byte(treeHeader + "f 0644 1 " + strings.Repeat("0", 64) + " a\x00"))
	f.Add([]byte(treeHeader + "d 0755 0 " + strings.Repeat("a", 64) + " ..\x00"))
	f.Add([]byte(treeHeader + "f 0644 -1 " + strings.Repeat("a", 64) + " x\x00"))
	f.Add([]byte(treeHeader + "f 0644 01 " + strings.Repeat("a", 64) + " x/y\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ents, err := decodeTree(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if got := encodeTree(ents); !bytes.Equal(got, data) {
			t.Fatalf("decode/encode changed the tree:\n%q\n%q", data, got)
		}
		for _, e := range ents {
			if !validName(e.name) || e.perm > 0o777 || e.size < 0 {
				t.Fatalf("accepted entry %+v", e)
			}
		}
	})
}

// withSum appends the SHA-256 of body, as the index formats end: the
// fuzzers reach the parser behind the checksum, and a corrupt sum is
// tested on its own.
func withSum(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(body[:len(body):len(body)], sum[:]...)
}

func withoutSum(data []byte) []byte { return data[:len(data)-sha256.Size] }

func FuzzIndex(f *testing.F) {
	f.Add(withoutSum(encodeIndex(index{})))
	f.Add(withoutSum(encodeIndex(index{
		"a/b": {st: fileStat{dev: 1, ino: 2, size: 3, mtime: 4, ctime: 5, mode: 0o100644}, hash: hashOf([]byte("x"))},
		"c":   {st: fileStat{size: -1}},
	})))
	f.Add([]byte(indexHeader + "a/../b\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, data := range [][]byte{withSum(body), body} {
			ix, err := decodeIndex(data)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v is not ErrCorrupt", err)
				}
				continue
			}
			again, err := decodeIndex(encodeIndex(ix))
			if err != nil || len(again) != len(ix) {
				t.Fatalf("round trip: %v", err)
			}
			for p, e := range ix {
				if !validRel(p) || again[p] != e {
					t.Fatalf("entry %q: %+v vs %+v", p, e, again[p])
				}
			}
		}
	})
}

func FuzzPackIndex(f *testing.F) {
	f.Add(withoutSum(encodePackIndex(nil)))
	f.Add(withoutSum(encodePackIndex([]idxEntry{{hash: hashOf([]byte("a")), off: 0, size: 1}, {hash: hashOf([]byte("b")), off: 1, size: 1}})))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, data := range [][]byte{withSum(body), body} {
			ents, err := decodePackIndex(data)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v is not ErrCorrupt", err)
				}
				continue
			}
			if got := encodePackIndex(ents); !bytes.Equal(got, data) {
				t.Fatalf("decode/encode changed the pack index")
			}
			for _, e := range ents {
				if e.off < 0 || e.size < 0 {
					t.Fatalf("accepted %+v", e)
				}
			}
		}
	})
}

func FuzzRecord(f *testing.F) {
	c := &Checkpoint{Version: 1, ID: "0123456789ab", Seq: 7, Time: time.Unix(1e9, 0).UTC(), Tree: hashOf(nil).String(),
		Reason: ReasonCall, Call: &Call{Tool: "run_command", Summary: "rm -rf src"}, Ignore: []string{"node_modules/"},
		Gitignore: true, Files: 3, Bytes: 10, Skipped: []Skip{{Path: "big", Size: 1, Why: "large"}}, SkippedCount: 1}
	b, _ := encodeRecord(c)
	f.Add(b)
	f.Add([]byte(`{"version":1,"id":"0123456789ab","seq":1,"tree":"x","reason":"call"}`))
	f.Add([]byte(`{"version":1,"id":"../../etc/pa","seq":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeRecord(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if !idPattern.MatchString(c.ID) || c.Seq <= 0 || (c.Reason != ReasonCall && c.Reason != ReasonUndo) {
			t.Fatalf("accepted %+v", c)
		}
		if _, err := parseHash(c.Tree); err != nil {
			t.Fatalf("accepted tree %q", c.Tree)
		}
		b, err := encodeRecord(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeRecord(b); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}

func FuzzJournal(f *testing.F) {
	j := Journal{Version: 1, Target: "0123456789ab", Before: "ba9876543210", Digest: "d", Ops: 3, PID: 1}
	b, _ := json.Marshal(j)
	f.Add(b)
	f.Add([]byte(`{"version":1,"target":"../x","before":"0123456789ab"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := decodeJournal(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if !idPattern.MatchString(j.Target) || !idPattern.MatchString(j.Before) || j.Ops < 0 {
			t.Fatalf("accepted %+v", j)
		}
	})
}

// FuzzIgnore: any .gitignore text parses, and matching never panics.
func FuzzIgnore(f *testing.F) {
	f.Add("node_modules/\n*.o\n!keep.o\n/build\na/**/b\n\\#x\n[z-a]\n", "a/b/keep.o")
	f.Add("**\n!**/\n", "x")
	f.Fuzz(func(t *testing.T, text, path string) {
		rules := parseIgnore(text, []string{"d"})
		comps := strings.Split("d/"+path, "/")
		for _, c := range comps {
			if c == "" {
				return
			}
		}
		dir, name := comps[:len(comps)-1], comps[len(comps)-1]
		ignored(rules, dir, name, true)
		ignored(rules, dir, name, false)
	})
}
