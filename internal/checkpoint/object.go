package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	stdhash "hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// objects is the content-addressed part of the store: file contents, link
// targets and trees, each named by the SHA-256 of its bytes. New objects
// are appended to pack files (packs/<id>.pack), one per writer per
// checkpoint, and a pack's index (packs/<id>.idx: hash, offset, length,
// sorted, with a checksum) is written and synced after the pack itself.
// An object exists once an index names it; a pack without an index is
// the remains of a killed writer and is removed.
//
// Packs rather than one file per object: creating a file costs about as
// much as writing 40 KB here, and a workspace has many small files.
type objects struct {
	dir string

	mu      sync.Mutex
	loc     map[hash]objLoc // committed objects
	pending map[hash]objLoc // appended to a pack not yet committed
	pendN   int64           // their bytes
	readers map[string]*os.File
	writers []*packWriter
}

type objLoc struct {
	pack      string
	off, size int64
}

var packName = regexp.MustCompile(`^([0-9a-f]{16})\.(pack|idx)$`)

// loadObjects reads every pack index in dir.
func loadObjects(dir string) (*objects, error) {
	o := &objects{dir: dir, loc: map[hash]objLoc{}, pending: map[hash]objLoc{}, readers: map[string]*os.File{}}
	ids, err := o.packIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		ents, err := o.readIndex(id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a pack being written, or the remains of one
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if _, ok := o.loc[e.hash]; !ok {
				o.loc[e.hash] = objLoc{pack: id, off: e.off, size: e.size}
			}
		}
	}
	return o, nil
}

// packIDs lists the packs that have an index.
func (o *objects) packIDs() ([]string, error) {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("failed to list the checkpoint store: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if m := packName.FindStringSubmatch(e.Name()); m != nil && m[2] == "idx" {
			ids = append(ids, m[1])
		}
	}
	return ids, nil
}

// removeOrphans removes packs without an index: a writer killed before
// committing them. The caller holds the store's lock.
func (o *objects) removeOrphans() {
	ents, _ := os.ReadDir(o.dir)
	have := map[string]bool{}
	for _, e := range ents {
		if m := packName.FindStringSubmatch(e.Name()); m != nil && m[2] == "idx" {
			have[m[1]] = true
		}
	}
	for _, e := range ents {
		m := packName.FindStringSubmatch(e.Name())
		if (m != nil && m[2] == "pack" && !have[m[1]]) || strings.HasPrefix(e.Name(), ".tmp-") {
			os.Remove(filepath.Join(o.dir, e.Name()))
		}
	}
}

// pendingBytes is the size of the objects written and not yet committed.
func (o *objects) pendingBytes() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pendN
}

func (o *objects) has(h hash) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.loc[h]
	if !ok {
		_, ok = o.pending[h]
	}
	return ok
}

// close releases the open packs; uncommitted packs are removed.
func (o *objects) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.readers {
		f.Close()
	}
	o.readers = map[string]*os.File{}
	for _, w := range o.writers {
		if w.f != nil {
			w.f.Close()
			os.Remove(w.path())
		}
	}
	o.writers = nil
}

// packWriter appends objects to one new pack. It is used by one goroutine
// at a time.
type packWriter struct {
	o    *objects
	id   string
	f    *os.File
	off  int64
	ents []idxEntry
	buf  []byte
}

func (o *objects) newWriter() *packWriter {
	w := &packWriter{o: o, id: newID() + newID()[:4]}
	o.mu.Lock()
	o.writers = append(o.writers, w)
	o.mu.Unlock()
	return w
}

func (w *packWriter) path() string { return filepath.Join(w.o.dir, w.id+".pack") }

func (w *packWriter) open() error {
	if w.f != nil {
		return nil
	}
	f, err := os.OpenFile(w.path(), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("failed to store objects: %w", err)
	}
	w.f = f
	return nil
}

// put stores data unless an object with its hash exists.
func (w *packWriter) put(data []byte) (hash, error) {
	h := hashOf(data)
	if w.o.has(h) {
		return h, nil
	}
	if err := w.open(); err != nil {
		return h, err
	}
	if _, err := w.f.WriteAt(data, w.off); err != nil {
		return h, fmt.Errorf("failed to store an object: %w", err)
	}
	w.claim(h, int64(len(data)))
	return h, nil
}

// claim records the object just appended at w.off, or gives its space
// back when another writer stored the same content meanwhile.
func (w *packWriter) claim(h hash, n int64) {
	w.o.mu.Lock()
	_, a := w.o.loc[h]
	_, b := w.o.pending[h]
	if !a && !b {
		w.o.pending[h] = objLoc{pack: w.id, off: w.off, size: n}
		w.o.pendN += n
	}
	w.o.mu.Unlock()
	if a || b {
		return // the bytes after w.off are overwritten next
	}
	w.ents = append(w.ents, idxEntry{hash: h, off: w.off, size: n})
	w.off += n
}

// putStream appends what r yields (at most limit bytes) and returns its
// hash and length. Content already stored is appended, then given back.
func (w *packWriter) putStream(r io.Reader, limit int64) (hash, int64, error) {
	var h hash
	if err := w.open(); err != nil {
		return h, 0, err
	}
	if w.buf == nil {
		w.buf = make([]byte, 256<<10)
	}
	sum := sha256.New()
	var n int64
	for {
		m, err := r.Read(w.buf)
		if m > 0 {
			if n+int64(m) > limit {
				return h, n, fmt.Errorf("grew past %d bytes while being read", limit)
			}
			sum.Write(w.buf[:m])
			if _, werr := w.f.WriteAt(w.buf[:m], w.off+n); werr != nil {
				return h, n, fmt.Errorf("failed to store an object: %w", werr)
			}
			n += int64(m)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return h, n, err
		}
	}
	sum.Sum(h[:0])
	w.claim(h, n)
	return h, n, nil
}

// commit makes every pack written since loadObjects durable and indexed:
// each pack is synced, then its index is written, synced and renamed into
// place, then the directory is synced. It returns the bytes added.
func (o *objects) commit() (int64, error) {
	o.mu.Lock()
	writers := o.writers
	o.writers = nil
	o.mu.Unlock()
	var added int64
	wrote := false
	for _, w := range writers {
		if w.f == nil {
			continue
		}
		if len(w.ents) == 0 {
			w.f.Close()
			os.Remove(w.path())
			continue
		}
		err := w.f.Truncate(w.off) // drop the tail of a duplicate or failed read
		if err == nil {
			err = w.f.Sync()
		}
		if cerr := w.f.Close(); err == nil {
			err = cerr
		}
		w.f = nil
		if err != nil {
			os.Remove(w.path())
			return 0, fmt.Errorf("failed to store objects: %w", err)
		}
		if err := writeAtomic(filepath.Join(o.dir, w.id+".idx"), encodePackIndex(w.ents), true); err != nil {
			os.Remove(w.path())
			return 0, err
		}
		wrote = true
		added += w.off
		o.mu.Lock()
		for _, e := range w.ents {
			o.loc[e.hash] = objLoc{pack: w.id, off: e.off, size: e.size}
			if _, ok := o.pending[e.hash]; ok {
				delete(o.pending, e.hash)
				o.pendN -= e.size
			}
		}
		o.mu.Unlock()
	}
	if wrote {
		if err := fsyncPath(o.dir); err != nil {
			return 0, err
		}
	}
	return added, nil
}

// reader returns the open pack id.
func (o *objects) reader(id string) (*os.File, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.readers[id]; ok {
		return f, nil
	}
	f, err := os.Open(filepath.Join(o.dir, id+".pack"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, corrupt("pack %s is missing", id)
		}
		return nil, fmt.Errorf("failed to read the checkpoint store: %w", err)
	}
	o.readers[id] = f
	return f, nil
}

// open returns a reader of object h that fails at the end when the bytes
// read do not hash to h: a damaged object is never restored.
func (o *objects) open(h hash) (io.Reader, int64, error) {
	o.mu.Lock()
	l, ok := o.loc[h]
	o.mu.Unlock()
	if !ok {
		return nil, 0, corrupt("object %s is missing", h)
	}
	f, err := o.reader(l.pack)
	if err != nil {
		return nil, 0, err
	}
	return &verifier{r: io.NewSectionReader(f, l.off, l.size), n: l.size, want: h, sum: sha256.New()}, l.size, nil
}

// read returns object h whole, checked; limit bounds its size.
func (o *objects) read(h hash, limit int64) ([]byte, error) {
	r, size, err := o.open(h)
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, corrupt("object %s has %d bytes, more than the %d expected", h, size, limit)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	if _, err := r.Read(nil); err != io.EOF {
		return nil, err
	}
	return data, nil
}

type verifier struct {
	r    io.Reader
	n    int64 // bytes left
	want hash
	sum  stdhash.Hash
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.sum.Write(p[:n])
	v.n -= int64(n)
	if err == io.EOF || (err == nil && v.n == 0) {
		if v.n != 0 {
			return n, corrupt("object %s is truncated", v.want)
		}
		var got hash
		v.sum.Sum(got[:0])
		if got != v.want {
			return n, corrupt("object %s does not match its hash", v.want)
		}
		return n, io.EOF
	}
	return n, err
}

// A pack index is a header, then (hash, offset, length) per object sorted
// by hash, then the SHA-256 of everything before it.
const packIndexHeader = "warden-pack 1\n"

type idxEntry struct {
	hash      hash
	off, size int64
}

func encodePackIndex(ents []idxEntry) []byte {
	ents = slices.Clone(ents)
	slices.SortFunc(ents, func(a, b idxEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	var b bytes.Buffer
	b.WriteString(packIndexHeader)
	var fixed [sha256.Size + 16]byte
	for _, e := range ents {
		copy(fixed[:], e.hash[:])
		binary.LittleEndian.PutUint64(fixed[32:], uint64(e.off))
		binary.LittleEndian.PutUint64(fixed[40:], uint64(e.size))
		b.Write(fixed[:])
	}
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func decodePackIndex(data []byte) ([]idxEntry, error) {
	const rec = sha256.Size + 16
	if len(data) < len(packIndexHeader)+sha256.Size {
		return nil, corrupt("pack index is truncated")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, corrupt("pack index checksum does not match")
	}
	rest, ok := bytes.CutPrefix(body, []byte(packIndexHeader))
	if !ok || len(rest)%rec != 0 {
		return nil, corrupt("pack index is malformed")
	}
	ents := make([]idxEntry, 0, len(rest)/rec)
	for i := 0; i < len(rest); i += rec {
		var e idxEntry
		copy(e.hash[:], rest[i:])
		e.off = int64(binary.LittleEndian.Uint64(rest[i+32:]))
		e.size = int64(binary.LittleEndian.Uint64(rest[i+40:]))
		if e.off < 0 || e.size < 0 || e.off > 1<<50 || e.size > 1<<40 {
			return nil, corrupt("pack index entry %d is out of range", len(ents))
		}
		if n := len(ents); n > 0 && bytes.Compare(ents[n-1].hash[:], e.hash[:]) >= 0 {
			return nil, corrupt("pack index entry %d is out of order", n)
		}
		ents = append(ents, e)
	}
	return ents, nil
}

// readIndex reads and checks the index of pack id, including that every
// object lies within the pack.
func (o *objects) readIndex(id string) ([]idxEntry, error) {
	data, err := os.ReadFile(filepath.Join(o.dir, id+".idx"))
	if err != nil {
		return nil, err
	}
	ents, err := decodePackIndex(data)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id, err)
	}
	st, err := os.Stat(filepath.Join(o.dir, id+".pack"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, corrupt("pack %s is missing", id)
		}
		return nil, err
	}
	for _, e := range ents {
		if e.off+e.size > st.Size() {
			return nil, corrupt("pack %s: object %s lies past the end of the pack", id, e.hash)
		}
	}
	return ents, nil
}

func fsyncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("failed to sync %s: %w", p, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("failed to sync %s: %w", p, err)
	}
	return nil
}
