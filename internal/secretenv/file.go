package secretenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// maxTokenFile bounds a token file: a token is a line, not a document.
const maxTokenFile = 4096

// ReadTokenFile reads a secret from a file only its owner can read: the
// file must be a regular file owned by this process's user, with no
// permission bits for group or others (chmod 600), and hold one non-empty
// line (surrounding whitespace is dropped). A file anyone else can read is
// refused, naming the command that fixes it, rather than used: a token
// others could have read is not a secret.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to read token file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("failed to read token file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("token file %s is open to group or others (mode %04o); run: chmod 600 %s", path, perm, path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return "", fmt.Errorf("token file %s belongs to uid %d, not to this user (uid %d)", path, sys.Uid, os.Getuid())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("failed to read token file %s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("token file %s is larger than %d bytes; it should hold the token alone", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("token file %s is empty", path)
	case strings.ContainsAny(tok, "\n\r"):
		return "", errors.New("token file " + path + " holds more than one line; it should hold the token alone")
	}
	return tok, nil
}
