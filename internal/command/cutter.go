package command

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
)

// maxLineBytes bounds one kept output line; maxKeepLines bounds the lines
// kept when Spec.MaxOutputLines is 0.
const (
	maxLineBytes = 16 << 10
	maxKeepLines = 100000
)

// cutter collects combined output, keeping the first and last lines when
// there are more than maxLines of them or more than maxBytes: the head
// takes the first lines while it has room for half of each, the tail the
// last. What falls between is one marker line saying how many lines were
// cut; a line longer than maxLineBytes keeps its start and says how many
// bytes of it were cut.
type cutter struct {
	mu       sync.Mutex
	headN    int // lines to keep at the start
	tailN    int // lines to keep at the end
	halfB    int // bytes the head, and the tail, may hold
	head     [][]byte
	headB    int
	headDone bool     // a line did not fit: the head is closed
	tail     [][]byte // a queue: tail[tailAt:] are kept
	tailAt   int
	tailB    int
	total    int
	partial  []byte
	dropped  int // bytes of the partial line beyond maxLineBytes
}

func newCutter(maxLines, maxBytes int) *cutter {
	if maxLines <= 0 || maxLines > maxKeepLines {
		maxLines = maxKeepLines
	}
	h := (maxLines + 1) / 2
	return &cutter{headN: h, tailN: maxLines - h, halfB: maxBytes / 2}
}

func (c *cutter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		k := bytes.IndexByte(p, '\n')
		if k < 0 {
			c.appendPartial(p)
			break
		}
		c.appendPartial(p[:k])
		c.partial = append(c.partial, '\n')
		c.endLine()
		p = p[k+1:]
	}
	return n, nil
}

// copyBufs are the buffers ReadFrom reads a command's output through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom reads r to its end into c. os/exec copies a command's output
// pipe into c with io.Copy, which otherwise allocates a 32 KiB buffer for
// every command: the most of what a command costs the runner's heap, and
// so of its garbage collections.
func (c *cutter) ReadFrom(r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	var total int64
	for {
		n, err := r.Read(*bp)
		if n > 0 {
			c.Write((*bp)[:n])
			total += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (c *cutter) appendPartial(p []byte) {
	room := maxLineBytes - len(c.partial)
	if len(p) > room {
		c.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	c.partial = append(c.partial, p...)
}

// endLine files the partial line (which may lack its newline at the end of
// the output).
func (c *cutter) endLine() {
	l := c.partial
	if c.dropped > 0 {
		l = append(bytes.TrimSuffix(l, []byte("\n")), " [... "+strconv.Itoa(c.dropped)+" bytes of this line cut ...]\n"...)
	}
	c.partial, c.dropped = nil, 0
	c.line(l)
}

func (c *cutter) line(b []byte) {
	c.total++
	if !c.headDone && len(c.head) < c.headN && c.headB+len(b) <= c.halfB {
		c.head = append(c.head, b)
		c.headB += len(b)
		return
	}
	c.headDone = true
	if c.tailN == 0 || len(b) > c.halfB {
		// A line the tail cannot hold ends it: what the tail held before is
		// no longer the end of the output.
		clear(c.tail)
		c.tail, c.tailAt, c.tailB = c.tail[:0], 0, 0
		return
	}
	c.tail = append(c.tail, b)
	c.tailB += len(b)
	for len(c.tail)-c.tailAt > c.tailN || c.tailB > c.halfB {
		c.tailB -= len(c.tail[c.tailAt])
		c.tail[c.tailAt] = nil
		c.tailAt++
	}
	if c.tailAt > 1024 && c.tailAt > len(c.tail)/2 {
		c.tail = append(c.tail[:0], c.tail[c.tailAt:]...)
		c.tailAt = 0
	}
}

// result returns the kept output with a marker where lines were cut.
func (c *cutter) result() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.partial) > 0 || c.dropped > 0 {
		c.endLine()
	}
	var b bytes.Buffer
	for _, l := range c.head {
		b.Write(l)
	}
	tail := c.tail[c.tailAt:]
	cut := c.total - len(c.head) - len(tail)
	if cut > 0 {
		if b.Len() > 0 && b.Bytes()[b.Len()-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString("[... " + strconv.Itoa(cut) + " lines cut ...]\n")
	}
	for _, l := range tail {
		b.Write(l)
	}
	return b.String(), max(cut, 0)
}
