package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"sort"
	"syscall"
)

// atomicWrite writes data to a temporary file in d and renames it onto name,
// so a reader sees the old contents or the new ones, never half of them, and
// a crash leaves at most a stray temporary file, never a torn one.
func atomicWrite(d *os.Root, name string, data []byte, perm fs.FileMode) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := ".warden-tmp-" + hex.EncodeToString(b[:]) + "-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	f, err := d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			d.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := d.Rename(tmp, name); err != nil {
		return err
	}
	ok = true
	return nil
}

func linkCount(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Nlink)
	}
	return 1
}

func sortEntries(ents []fs.DirEntry) {
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
}
