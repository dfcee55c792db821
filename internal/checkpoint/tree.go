package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// A hash names an object by the SHA-256 of its bytes.
type hash [sha256.Size]byte

func (h hash) String() string { return hex.EncodeToString(h[:]) }

func parseHash(s string) (hash, error) {
	var h hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("hash %q is not %d hex digits", s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil || strings.ToLower(s) != s {
		return h, fmt.Errorf("hash %q is not lowercase hex", s)
	}
	return h, nil
}

// kind is what a tree entry records.
type kind byte

const (
	kindFile kind = 'f' // a regular file: hash names its content
	kindDir  kind = 'd' // a directory: hash names its tree
	kindLink kind = 'l' // a symbolic link: hash names its target
	// The kinds below record that a path exists without its content, so a
	// restore leaves it alone rather than deleting it.
	kindMasked   kind = 'm' // masked: never read, never written
	kindTooBig   kind = 'b' // larger than max_file_bytes
	kindHardLink kind = 'h' // a regular file with other hard links
	kindOther    kind = 'o' // a FIFO, socket, device or unreadable directory
	kindBusy     kind = 'u' // a file that kept changing while it was read
)

// recorded reports whether k's content is in the store.
func (k kind) recorded() bool { return k == kindFile || k == kindDir || k == kindLink }

func (k kind) String() string {
	switch k {
	case kindFile:
		return "file"
	case kindDir:
		return "directory"
	case kindLink:
		return "symbolic link"
	case kindMasked:
		return "masked path"
	case kindTooBig:
		return "file too large to record"
	case kindHardLink:
		return "file with hard links"
	case kindOther:
		return "special file"
	case kindBusy:
		return "file that kept changing while it was read"
	}
	return fmt.Sprintf("kind %q", byte(k))
}

// entry is one name in a directory's tree.
type entry struct {
	name string
	kind kind
	perm fs.FileMode // permission bits only
	size int64       // file size, link target length; 0 for a directory
	hash hash        // zero for the kinds whose content is not recorded
}

// A tree object is a header line, then one line per entry, sorted by name:
//
//	<kind> <perm, 4 octal digits> <size> <hash, 64 hex digits> <name> NUL
//
// A name may hold any byte but "/" and NUL, so NUL ends it. The encoding of
// a directory depends only on what it holds, so an unchanged directory has
// the same tree, and its object is shared between checkpoints.
const treeHeader = "warden-tree 1\n"

func encodeTree(ents []entry) []byte {
	var b bytes.Buffer
	b.Grow(len(treeHeader) + len(ents)*96)
	b.WriteString(treeHeader)
	var hx [2 * sha256.Size]byte
	var num [24]byte
	for _, e := range ents {
		b.WriteByte(byte(e.kind))
		b.WriteByte(' ')
		perm := uint32(e.perm.Perm())
		b.Write([]byte{'0' + byte(perm>>9&7), '0' + byte(perm>>6&7), '0' + byte(perm>>3&7), '0' + byte(perm&7), ' '})
		b.Write(strconv.AppendInt(num[:0], e.size, 10))
		b.WriteByte(' ')
		hex.Encode(hx[:], e.hash[:])
		b.Write(hx[:])
		b.WriteByte(' ')
		b.WriteString(e.name)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// decodeTree parses a tree object strictly: any deviation from what
// encodeTree writes is corruption, reported with the entry it is in.
func decodeTree(data []byte) ([]entry, error) {
	rest, ok := bytes.CutPrefix(data, []byte(treeHeader))
	if !ok {
		return nil, corrupt("tree has no %q header", strings.TrimSpace(treeHeader))
	}
	var ents []entry
	for len(rest) > 0 {
		end := bytes.IndexByte(rest, 0)
		if end < 0 {
			return nil, corrupt("tree entry %d is not terminated", len(ents))
		}
		e, err := decodeEntry(string(rest[:end]))
		if err != nil {
			return nil, corrupt("tree entry %d: %v", len(ents), err)
		}
		if n := len(ents); n > 0 && ents[n-1].name >= e.name {
			return nil, corrupt("tree entry %d: %q is out of order", n, e.name)
		}
		ents = append(ents, e)
		rest = rest[end+1:]
	}
	return ents, nil
}

func decodeEntry(line string) (entry, error) {
	var e entry
	f := strings.SplitN(line, " ", 5)
	if len(f) != 5 || len(f[0]) != 1 {
		return e, fmt.Errorf("malformed")
	}
	e.kind = kind(f[0][0])
	switch e.kind {
	case kindFile, kindDir, kindLink, kindMasked, kindTooBig, kindHardLink, kindOther, kindBusy:
	default:
		return e, fmt.Errorf("unknown kind %q", f[0])
	}
	if len(f[1]) != 4 {
		return e, fmt.Errorf("bad mode %q", f[1])
	}
	perm, err := strconv.ParseUint(f[1], 8, 32)
	if err != nil || perm > 0o777 {
		return e, fmt.Errorf("bad mode %q", f[1])
	}
	e.perm = fs.FileMode(perm)
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != f[2] {
		return e, fmt.Errorf("bad size %q", f[2])
	}
	e.size = size
	if e.hash, err = parseHash(f[3]); err != nil {
		return e, err
	}
	if e.kind.recorded() == (e.hash == hash{}) {
		return e, fmt.Errorf("%s with hash %s", e.kind, f[3])
	}
	if e.kind == kindDir && e.size != 0 {
		return e, fmt.Errorf("directory with size %d", e.size)
	}
	if !validName(f[4]) {
		return e, fmt.Errorf("bad name %q", f[4])
	}
	e.name = f[4]
	return e, nil
}

func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

func hashOf(data []byte) hash { return sha256.Sum256(data) }
