package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"golang.org/x/sys/unix"
)

// fileStat is what decides that a file is unchanged since it was last
// hashed: the same inode on the same device, with the same size, mode and
// modification and change times (to the nanosecond the file system keeps).
// Rewriting a file, even with the same size within the same clock tick,
// moves its ctime or inode: the index (below) handles the tick.
type fileStat struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns since the epoch
	mode         uint32
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{
		dev: st.Dev, ino: st.Ino, size: st.Size, mode: st.Mode,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(),
	}
}

// The index maps a workspace path to the stat of the file when it was
// last hashed and the hash of its content then; a file whose stat matches
// is not read again. It is a cache: losing it costs one full read of the
// workspace, never a wrong checkpoint, and a damaged one is dropped whole
// (it carries its own SHA-256).
//
// A file changed within the file system's clock tick of being hashed could
// keep its times (git's "racily clean" problem), so entries whose mtime or
// ctime is not safely older than the scan that hashed them are not kept:
// such files are read again next time.
type index map[string]indexEntry

type indexEntry struct {
	st   fileStat
	hash hash
}

const (
	indexHeader = "warden-index 1\n"
	indexFixed  = 8*5 + 4 + sha256.Size // dev ino size mtime ctime, mode, hash
)

func encodeIndex(ix index) []byte {
	var b bytes.Buffer
	b.Grow(len(indexHeader) + len(ix)*(indexFixed+48) + sha256.Size)
	b.WriteString(indexHeader)
	var fixed [indexFixed]byte
	for p, e := range ix {
		b.WriteString(p)
		b.WriteByte(0)
		le := binary.LittleEndian
		le.PutUint64(fixed[0:], e.st.dev)
		le.PutUint64(fixed[8:], e.st.ino)
		le.PutUint64(fixed[16:], uint64(e.st.size))
		le.PutUint64(fixed[24:], uint64(e.st.mtime))
		le.PutUint64(fixed[32:], uint64(e.st.ctime))
		le.PutUint32(fixed[40:], e.st.mode)
		copy(fixed[44:], e.hash[:])
		b.Write(fixed[:])
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func decodeIndex(data []byte) (index, error) {
	if len(data) < len(indexHeader)+sha256.Size {
		return nil, corrupt("index is truncated")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, corrupt("index checksum does not match")
	}
	rest, ok := bytes.CutPrefix(body, []byte(indexHeader))
	if !ok {
		return nil, corrupt("index has no %q header", strings.TrimSpace(indexHeader))
	}
	ix := make(index, len(rest)/(indexFixed+32))
	for len(rest) > 0 {
		end := bytes.IndexByte(rest, 0)
		if end < 0 || len(rest) < end+1+indexFixed {
			return nil, corrupt("index entry %d is truncated", len(ix))
		}
		p := string(rest[:end])
		if _, dup := ix[p]; dup || !validRel(p) {
			return nil, corrupt("index entry %d has a bad or repeated path %q", len(ix), p)
		}
		f := rest[end+1 : end+1+indexFixed]
		le := binary.LittleEndian
		var e indexEntry
		e.st = fileStat{
			dev: le.Uint64(f[0:]), ino: le.Uint64(f[8:]), size: int64(le.Uint64(f[16:])),
			mtime: int64(le.Uint64(f[24:])), ctime: int64(le.Uint64(f[32:])), mode: le.Uint32(f[40:]),
		}
		copy(e.hash[:], f[44:])
		ix[p] = e
		rest = rest[end+1+indexFixed:]
	}
	return ix, nil
}

// validRel reports whether p is a clean, relative, slash-separated path
// with at least one component.
func validRel(p string) bool {
	for {
		c, rest, more := strings.Cut(p, "/")
		if !validName(c) {
			return false
		}
		if !more {
			return true
		}
		p = rest
	}
}
