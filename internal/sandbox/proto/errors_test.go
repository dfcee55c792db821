package proto

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/workspace"
)

func testRoot(t testing.TB, files map[string]string) *workspace.Root {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := workspace.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// TestErrorRoundTrip: an error the worker's workspace returns reads the
// same on the host, and errors.Is holds for its sentinel.
func TestErrorRoundTrip(t *testing.T) {
	t.Parallel()
	root := testRoot(t, map[string]string{"a.txt": "A", "d/b.txt": "B"})
	calls := []struct {
		name string
		do   func() error
		want error
	}{
		{"escape", func() error { _, err := root.ReadFile("../../etc/passwd", 0); return err }, workspace.ErrEscapes},
		{"masked", func() error { _, err := root.ReadFile(".env", 0); return err }, workspace.ErrMasked},
		{"protected", func() error { return root.WriteFile(".git/hooks/pre-commit", nil, 0o755) }, workspace.ErrProtected},
		{"not exist", func() error { _, err := root.Stat("nope"); return err }, fs.ErrNotExist},
		{"too large", func() error {
			os.WriteFile(filepath.Join(root.Dir(), "big"), []byte("0123456789"), 0o644)
			_, err := root.ReadFile("big", 3)
			return err
		}, workspace.ErrTooLarge},
		{"not empty", func() error { return root.Remove("d") }, syscall.ENOTEMPTY},
	}
	for _, c := range calls {
		local := c.do()
		if local == nil {
			t.Errorf("%s: the local call did not fail", c.name)
			continue
		}
		remote := DecodeError(EncodeError(local))
		if !errors.Is(remote, c.want) {
			t.Errorf("%s: decoded %v does not match %v", c.name, remote, c.want)
		}
		if diff := cmp.Diff(local.Error(), remote.Error()); diff != "" {
			t.Errorf("%s: message changed across the wire (-local +remote):\n%s", c.name, diff)
		}
		var pe *workspace.PathError
		if errors.As(local, &pe) && !errors.As(remote, &pe) {
			t.Errorf("%s: remote error is not a *workspace.PathError", c.name)
		}
	}
}
