package rulefile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/config"
)

// ErrNotFound means no rule with that id is in the file.
var ErrNotFound = errors.New("no rule with this id")

// Header starts the comment above each rule warden writes.
const Header = "# written by warden"

// NewID returns a fresh rule id ("always-" and 12 hex digits).
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "always-" + hex.EncodeToString(b[:])
}

// Render is r as a TOML [[rules]] table, preceded by a comment saying what
// wrote it. Every value is a TOML string or boolean.
func Render(r config.Rule) string {
	var b strings.Builder
	b.WriteString("\n" + Header)
	if r.RequestID != "" {
		b.WriteString(" (\"always\" on request " + r.RequestID + ")")
	}
	b.WriteString("\n[[rules]]\n")
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s = %s\n", k, quote(v))
		}
	}
	kv("id", r.ID)
	kv("workspace", r.Workspace)
	if r.Command != nil {
		words := make([]string, len(r.Command))
		for i, w := range r.Command {
			words[i] = quote(w)
		}
		fmt.Fprintf(&b, "command = [%s]\n", strings.Join(words, ", "))
	}
	if r.Exact {
		b.WriteString("exact = true\n")
	}
	kv("tool", r.Tool)
	kv("path", r.Path)
	kv("host", r.Host)
	kv("decision", r.Decision)
	kv("request_id", r.RequestID)
	kv("created", r.Created)
	return b.String()
}

// quote is a TOML basic string: JSON's escapes (\" \\ \n \uXXXX …) are
// TOML's too.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// Add appends rules to the TOML file at path (created, with its directory,
// when missing). Each rule needs an id not already in the file.
func Add(path string, rs []config.Rule) error {
	if err := checkTOML(path); err != nil {
		return err
	}
	return edit(path, func(data []byte, cur []config.Rule) ([]byte, func([]config.Rule) error, error) {
		var add strings.Builder
		for _, r := range rs {
			if r.ID == "" {
				return nil, nil, errors.New("a written rule needs an id")
			}
			if slices.ContainsFunc(cur, func(c config.Rule) bool { return c.ID == r.ID }) {
				return nil, nil, fmt.Errorf("a rule with id %s is already in %s", r.ID, path)
			}
			add.WriteString(Render(r))
		}
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data, '\n')
		}
		out := append(slices.Clip(data), add.String()...)
		check := func(after []config.Rule) error {
			if len(after) != len(cur)+len(rs) {
				return fmt.Errorf("expected %d rules after adding, found %d", len(cur)+len(rs), len(after))
			}
			return nil
		}
		return out, check, nil
	})
}

// Remove deletes the rule with id from the TOML file at path and returns it.
func Remove(path, id string) (config.Rule, error) {
	var removed config.Rule
	if id == "" {
		return removed, errors.New("only a rule with an id can be removed; edit the file by hand")
	}
	if err := checkTOML(path); err != nil {
		return removed, err
	}
	err := edit(path, func(data []byte, cur []config.Rule) ([]byte, func([]config.Rule) error, error) {
		i := slices.IndexFunc(cur, func(r config.Rule) bool { return r.ID == id })
		if i < 0 {
			return nil, nil, fmt.Errorf("%s: %w %q", path, ErrNotFound, id)
		}
		removed = cur[i]
		out, err := cut(data, removed.Line)
		if err != nil {
			return nil, nil, err
		}
		check := func(after []config.Rule) error {
			if len(after) != len(cur)-1 || slices.ContainsFunc(after, func(r config.Rule) bool { return r.ID == id }) {
				return fmt.Errorf("removing rule %s would change other rules; edit %s by hand", id, path)
			}
			return nil
		}
		return out, check, nil
	})
	return removed, err
}

// cut removes the [[rules]] table whose header is on line (1-based): the
// header, its keys up to the next table header or the end, and the comment
// and blank line warden wrote above it.
func cut(data []byte, line int) ([]byte, error) {
	lines := strings.SplitAfter(string(data), "\n")
	h := line - 1
	if h < 0 || h >= len(lines) || strings.TrimSpace(lines[h]) != "[[rules]]" {
		return nil, fmt.Errorf("line %d is not a [[rules]] header; edit the file by hand", line)
	}
	end := h + 1
	for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "[") {
		end++
	}
	// Comments and blank lines just before the next header belong to it.
	for end > h+1 && isBlankOrComment(lines[end-1]) && end < len(lines) {
		end--
	}
	start := h
	if start > 0 && strings.HasPrefix(strings.TrimSpace(lines[start-1]), Header) {
		start--
		if start > 0 && strings.TrimSpace(lines[start-1]) == "" {
			start--
		}
	}
	return []byte(strings.Join(lines[:start], "") + strings.Join(lines[end:], "")), nil
}

func isBlankOrComment(l string) bool {
	t := strings.TrimSpace(l)
	return t == "" || strings.HasPrefix(t, "#")
}

func checkTOML(path string) error {
	if !strings.EqualFold(filepath.Ext(path), ".toml") {
		return fmt.Errorf("%s is not a TOML file: warden writes rules into a TOML user config only (add the rule by hand, or move to config.toml)", path)
	}
	return nil
}

// edit changes the file at path under its lock: change gets the current
// bytes and rules and returns the new bytes and a check of the new rules;
// the new file is written beside the old one, loaded, checked, and renamed
// over it.
func edit(path string, change func(data []byte, cur []config.Rule) ([]byte, func([]config.Rule) error, error)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	unlock, err := lock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()

	mode := fs.FileMode(0o600)
	data, err := os.ReadFile(path)
	var cur []config.Rule
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	default:
		st, err := os.Lstat(path)
		if err != nil {
			return fmt.Errorf("stat %s: %w", path, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file; warden edits only a regular file", path)
		}
		mode = st.Mode().Perm()
		if cur, err = config.FileRules(path); err != nil {
			return fmt.Errorf("%s does not load, so warden will not edit it: %w", path, err)
		}
	}
	out, check, err := change(data, cur)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".rules-*.toml")
	if err != nil {
		return fmt.Errorf("create a temporary file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing left to remove
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	after, err := config.FileRules(tmp.Name())
	if err != nil {
		return fmt.Errorf("the edited %s would not load; nothing was changed: %w", path, err)
	}
	if err := check(after); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// lock takes an exclusive flock on path (created 0600), waiting for it.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

// User writes rules into the user config (approval.RuleWriter).
type User struct {
	// Path is the user config file; "" is config.UserFile's.
	Path string
}

// AddRules implements approval.RuleWriter.
func (u User) AddRules(rs []config.Rule) (string, error) {
	p := u.Path
	if p == "" {
		var err error
		if p, err = config.UserFile(nil); err != nil {
			return "", err
		}
	}
	return p, Add(p, rs)
}
