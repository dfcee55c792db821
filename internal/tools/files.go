package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// Limits of the file tools.
const (
	// MaxReadBytes is the largest file read_file, edit_file and apply_patch load.
	MaxReadBytes = 10 << 20
	// DefaultReadLines is how many lines read_file returns when no limit is given.
	DefaultReadLines = 2000
	// MaxWriteBytes is the largest content write_file accepts.
	MaxWriteBytes = 10 << 20
)

// ErrDeleteDisabled refuses deletes unless workspace.allow_delete is set.
var ErrDeleteDisabled = errors.New("deleting files is disabled (workspace.allow_delete = false); ask the user to enable it in their own config if deletes are needed")

// checkPath applies the name-level guards (syntax, escapes, masks and, for
// writes, protected paths) before policy runs. The same guards apply again,
// race-free, when the call executes.
func checkPath(env *Env, op, name string, write bool) error {
	if env.Root == nil {
		return nil
	}
	return env.Root.Check(op, name, write)
}

// changeFacts applies the guards of a change to name and resolves where
// it lands.
func changeFacts(env *Env, op, name string) (Facts, error) {
	if err := checkPath(env, op, name, true); err != nil {
		return Facts{}, err
	}
	loc, err := locate(env, op, name)
	if err != nil {
		return Facts{}, err
	}
	return Facts{Locations: []Location{loc}}, nil
}

func isBinary(b []byte) bool {
	if len(b) > 8192 {
		b = b[:8192]
	}
	return bytes.IndexByte(b, 0) >= 0
}

type readArgs struct {
	Path   string `json:"path" jsonschema:"file path relative to the workspace root"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line to return, counting from 1 (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many lines to return (default 2000)"`
}

// ReadFile is the read_file tool.
func ReadFile() *Tool {
	return &Tool{
		Name:        "read_file",
		Description: "Read a text file in the workspace. Returns its lines from offset (1-based) up to limit lines; says how many lines the file has when it returns only part of it.",
		Group:       GroupFSRead,
		Annotations: Annotations{ReadOnly: true, Idempotent: true},
		Schema:      schemaFor[readArgs](),
		Guard: func(env *Env, raw json.RawMessage) (Facts, error) {
			a, err := decodeArgs[readArgs](raw)
			if err != nil {
				return Facts{}, err
			}
			return Facts{}, checkPath(env, "read", a.Path, false)
		},
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[readArgs](raw)
			if err != nil {
				return "", err
			}
			if a.Offset < 0 || a.Limit < 0 {
				return "", fmt.Errorf("offset and limit must not be negative")
			}
			data, err := env.FS.ReadFile(a.Path, MaxReadBytes)
			if err != nil {
				return "", err
			}
			if isBinary(data) {
				return "", fmt.Errorf("'%s' is a binary file (%d bytes); read_file returns text only", a.Path, len(data))
			}
			return sliceLines(string(data), a.Offset, a.Limit), nil
		},
	}
}

// sliceLines returns lines [offset, offset+limit) of s (offset 1-based) and
// a note when that is not the whole file.
func sliceLines(s string, offset, limit int) string {
	if offset == 0 {
		offset = 1
	}
	if limit == 0 {
		limit = DefaultReadLines
	}
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if offset == 1 && total <= limit {
		return s
	}
	if offset > total {
		return fmt.Sprintf("[the file has %d lines; offset %d is past its end]", total, offset)
	}
	end := min(offset-1+limit, total)
	var b strings.Builder
	for _, l := range lines[offset-1 : end] {
		b.WriteString(l)
	}
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "[lines %d-%d of %d; use offset and limit to read more]", offset, end, total)
	return b.String()
}

type writeArgs struct {
	Path    string `json:"path" jsonschema:"file path relative to the workspace root; missing parent directories are created"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// WriteFile is the write_file tool.
func WriteFile() *Tool {
	return &Tool{
		Name:        "write_file",
		Description: "Create or replace a file in the workspace with the given content. The file is replaced atomically; an existing file keeps its permissions.",
		Group:       GroupFSWrite,
		Sensitive:   true,
		Annotations: Annotations{Destructive: true, Idempotent: true},
		Schema:      schemaFor[writeArgs](),
		Guard: func(env *Env, raw json.RawMessage) (Facts, error) {
			a, err := decodeArgs[writeArgs](raw)
			if err != nil {
				return Facts{}, err
			}
			if len(a.Content) > MaxWriteBytes {
				return Facts{}, fmt.Errorf("content is %d bytes; write_file accepts at most %d", len(a.Content), MaxWriteBytes)
			}
			return changeFacts(env, "write", a.Path)
		},
		Preview: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[writeArgs](raw)
			if err != nil {
				return "", err
			}
			old, _ := readIfExists(env, a.Path)
			return diff(a.Path, old, a.Content), nil
		},
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[writeArgs](raw)
			if err != nil {
				return "", err
			}
			if err := writeFile(ctx, env, a.Path, []byte(a.Content), 0o644); err != nil {
				return "", err
			}
			return fmt.Sprintf("Wrote %d bytes to %s", len(a.Content), a.Path), nil
		},
		Edits: func(raw json.RawMessage) []string {
			a, _ := decodeArgs[writeArgs](raw)
			return []string{a.Path}
		},
	}
}

// readIfExists returns the file's text, or "" when it does not exist.
func readIfExists(env *Env, name string) (string, error) {
	data, err := env.FS.ReadFile(name, MaxReadBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return string(data), err
}

func diff(name, old, new string) string {
	if old == new {
		return "(no change)"
	}
	return udiff.Unified("a/"+name, "b/"+name, old, new)
}

type editArgs struct {
	Path       string `json:"path" jsonschema:"file path relative to the workspace root"`
	OldStr     string `json:"old_str" jsonschema:"the exact text to replace; it must occur exactly once unless replace_all is true"`
	NewStr     string `json:"new_str" jsonschema:"the replacement text"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence of old_str"`
}

// EditFile is the edit_file tool.
func EditFile() *Tool {
	return &Tool{
		Name:        "edit_file",
		Description: "Replace an exact piece of text in a workspace file with new text. old_str must match exactly once (including whitespace) unless replace_all is set. Returns a unified diff of the change.",
		Group:       GroupFSWrite,
		Sensitive:   true,
		Annotations: Annotations{Destructive: true},
		Schema:      schemaFor[editArgs](),
		Guard: func(env *Env, raw json.RawMessage) (Facts, error) {
			a, err := decodeArgs[editArgs](raw)
			if err != nil {
				return Facts{}, err
			}
			if a.OldStr == "" {
				return Facts{}, errors.New("old_str must not be empty; use write_file to create a file")
			}
			return changeFacts(env, "write", a.Path)
		},
		Preview: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[editArgs](raw)
			if err != nil {
				return "", err
			}
			old, updated, err := planEdit(env, a)
			if err != nil {
				return "", err
			}
			return diff(a.Path, old, updated), nil
		},
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[editArgs](raw)
			if err != nil {
				return "", err
			}
			old, updated, err := planEdit(env, a)
			if err != nil {
				return "", err
			}
			if err := writeFile(ctx, env, a.Path, []byte(updated), 0o644); err != nil {
				return "", err
			}
			return diff(a.Path, old, updated), nil
		},
		Edits: func(raw json.RawMessage) []string {
			a, _ := decodeArgs[editArgs](raw)
			return []string{a.Path}
		},
	}
}

func planEdit(env *Env, a editArgs) (old, updated string, err error) {
	if a.OldStr == "" {
		return "", "", errors.New("old_str must not be empty; use write_file to create a file")
	}
	// Refuse a path the edit may not change before reading it, so the
	// error says why (not "old_str was not found") whoever calls this.
	if err := checkPath(env, "write", a.Path, true); err != nil {
		return "", "", err
	}
	data, err := env.FS.ReadFile(a.Path, MaxReadBytes)
	if err != nil {
		return "", "", err
	}
	if isBinary(data) {
		return "", "", fmt.Errorf("'%s' is a binary file; edit_file edits text only", a.Path)
	}
	old = string(data)
	switch n := strings.Count(old, a.OldStr); {
	case n == 0:
		return "", "", fmt.Errorf("old_str was not found in %s; read the file and copy the text exactly, including whitespace", a.Path)
	case n > 1 && !a.ReplaceAll:
		return "", "", fmt.Errorf("old_str occurs %d times in %s; include more surrounding text to make it unique, or set replace_all", n, a.Path)
	case a.ReplaceAll:
		return old, strings.ReplaceAll(old, a.OldStr, a.NewStr), nil
	default:
		return old, strings.Replace(old, a.OldStr, a.NewStr, 1), nil
	}
}

type deleteArgs struct {
	Path string `json:"path" jsonschema:"file path relative to the workspace root"`
}

// DeleteFile is the delete_file tool. It refuses unless the configuration
// sets workspace.allow_delete, in every mode.
func DeleteFile() *Tool {
	return &Tool{
		Name:        "delete_file",
		Description: "Delete a file (or an empty directory) in the workspace. Disabled unless the user's configuration allows deletes.",
		Group:       GroupFSWrite,
		Sensitive:   true,
		Annotations: Annotations{Destructive: true, Idempotent: true},
		Schema:      schemaFor[deleteArgs](),
		Guard: func(env *Env, raw json.RawMessage) (Facts, error) {
			a, err := decodeArgs[deleteArgs](raw)
			if err != nil {
				return Facts{}, err
			}
			if env.Config == nil || !env.Config.Workspace.AllowDelete {
				return Facts{}, ErrDeleteDisabled
			}
			return changeFacts(env, "delete", a.Path)
		},

		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[deleteArgs](raw)
			if err != nil {
				return "", err
			}
			if env.Config == nil || !env.Config.Workspace.AllowDelete {
				return "", ErrDeleteDisabled
			}
			if err := removeFile(ctx, env, a.Path); err != nil {
				return "", err
			}
			return "Deleted " + a.Path, nil
		},
	}
}
