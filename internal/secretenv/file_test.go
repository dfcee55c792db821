package secretenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, content string
		mode          os.FileMode
		want, err     string
	}{
		{name: "ok", content: "tok-0123456789abcdef\n", mode: 0o600, want: "tok-0123456789abcdef"},
		{name: "owner read-only", content: "  tok  ", mode: 0o400, want: "tok"},
		{name: "group-readable", content: "tok", mode: 0o640, err: "open to group or others (mode 0640); run: chmod 600"},
		{name: "world-readable", content: "tok", mode: 0o604, err: "open to group or others"},
		{name: "group-writable", content: "tok", mode: 0o620, err: "open to group or others"},
		{name: "empty", content: "\n", mode: 0o600, err: "is empty"},
		{name: "two lines", content: "a\nb\n", mode: 0o600, err: "more than one line"},
		{name: "huge", content: strings.Repeat("x", 5000), mode: 0o600, err: "larger than"},
	}
	for _, tt := range tests {
		got, err := ReadTokenFile(write(tt.name, tt.content, tt.mode))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tt.name, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
	if _, err := ReadTokenFile(dir); err == nil {
		t.Error("a directory was read as a token file")
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file was read")
	}
	// A link to a group-readable file is judged by the file.
	p := write("target", "tok", 0o644)
	if err := os.Symlink(p, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "link")); err == nil {
		t.Error("a link to a world-readable file was accepted")
	}
}
