package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"

	"golang.org/x/sys/unix"
)

// atomicWrite writes data to a new temporary file in the directory dirfd
// and renames it onto name, so a reader sees the old contents or the new
// ones, never half of them, and a crash leaves at most a stray temporary
// file, never a torn one. The temporary file is created with O_EXCL and
// O_NOFOLLOW, so no existing file or link is ever opened for writing.
// A new file gets perm less the umask; with keep, exactly perm.
func atomicWrite(dirfd int, name string, data []byte, perm fs.FileMode, keep bool) (err error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := ".warden-" + hex.EncodeToString(b[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
	if err != nil {
		return err
	}
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	for rest := data; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		rest = rest[n:]
	}
	if keep {
		if err := unix.Fchmod(fd, uint32(perm)); err != nil {
			return err
		}
	}
	if err := unix.Fsync(fd); err != nil {
		return err
	}
	err, fd = unix.Close(fd), -1
	if err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return err
	}
	// Make the rename itself durable.
	if dfd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Fsync(dfd)
		unix.Close(dfd)
	}
	return nil
}
