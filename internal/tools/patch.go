package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

type patchArgs struct {
	Patch string `json:"patch" jsonschema:"a unified diff (git diff format or plain --- a/file +++ b/file with @@ hunks; names lose their first component, a/ and b/, as with git apply); may change several files"`
}

// change is one file's planned new state.
type change struct {
	path    string
	existed bool   // the file existed before the patch
	old     string // its content then
	new     string
	remove  bool // delete path
	perm    fs.FileMode
	summary string
}

// ApplyPatch is the apply_patch tool: all or nothing. Every hunk of every
// file is applied in memory first; files are written only when all of them
// applied, and a write that fails midway is rolled back.
func ApplyPatch() *Tool {
	return &Tool{
		Name:        "apply_patch",
		Description: "Apply a unified diff to one or more workspace files, all or nothing: if any hunk does not apply, no file is changed. Supports new files, deletions (when deletes are allowed) and renames.",
		Group:       GroupFSWrite,
		Sensitive:   true,
		Annotations: Annotations{Destructive: true},
		Schema:      schemaFor[patchArgs](),
		Guard: func(env *Env, raw json.RawMessage) (Facts, error) {
			a, err := decodeArgs[patchArgs](raw)
			if err != nil {
				return Facts{}, err
			}
			files, err := parsePatch(a.Patch)
			if err != nil {
				return Facts{}, err
			}
			if err := checkPatchPaths(env, files); err != nil {
				return Facts{}, err
			}
			locs, err := patchLocations(env, files)
			if err != nil {
				return Facts{}, err
			}
			return Facts{Locations: locs}, nil
		},
		Preview: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[patchArgs](raw)
			if err != nil {
				return "", err
			}
			// The files the patch changes, by the names it will write
			// (which a plain diff's +++ b/x does not spell), then the patch.
			changes, err := planPatch(env, a.Patch)
			if err != nil {
				return "", err
			}
			var b strings.Builder
			b.WriteString("Files:")
			for _, c := range changes {
				b.WriteString("\n  " + c.summary)
			}
			b.WriteString("\n\n" + a.Patch)
			return b.String(), nil
		},
		Run: func(ctx context.Context, env *Env, raw json.RawMessage) (string, error) {
			a, err := decodeArgs[patchArgs](raw)
			if err != nil {
				return "", err
			}
			changes, err := planPatch(env, a.Patch)
			if err != nil {
				return "", err
			}
			if err := commitChanges(ctx, env, changes); err != nil {
				return "", err
			}
			var b strings.Builder
			b.WriteString("Applied patch:")
			for _, c := range changes {
				b.WriteString("\n  " + c.summary)
			}
			return b.String(), nil
		},
		Edits: func(raw json.RawMessage) []string {
			a, _ := decodeArgs[patchArgs](raw)
			files, _ := parsePatch(a.Patch)
			var out []string
			for _, f := range files {
				if !f.IsDelete && f.NewName != "" {
					out = append(out, f.NewName)
				}
			}
			return out
		},
	}
}

func parsePatch(patch string) ([]*gitdiff.File, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		return nil, fmt.Errorf("the patch does not parse: %v", err)
	}
	if len(files) == 0 {
		return nil, errors.New("the patch changes no file; it must be a unified diff with ---/+++ headers and @@ hunks")
	}
	if err := fixPlainNames(patch, files); err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.IsBinary {
			return nil, fmt.Errorf("the patch changes binary file %s; apply_patch applies text patches only", f.NewName)
		}
		if f.IsCopy {
			return nil, fmt.Errorf("the patch copies %s; copies are not supported", f.OldName)
		}
	}
	return files, nil
}

// checkPatchPaths applies the name-level guards to every file the patch
// names, and delete protection to the files it deletes.
func checkPatchPaths(env *Env, files []*gitdiff.File) error {
	for _, f := range files {
		if f.IsDelete && (env.Config == nil || !env.Config.Workspace.AllowDelete) {
			return fmt.Errorf("the patch deletes %s: %w", f.OldName, ErrDeleteDisabled)
		}
		for _, name := range []string{f.OldName, f.NewName} {
			if name == "" {
				continue
			}
			if err := checkPath(env, "write", name, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// planPatch applies every file's hunks in memory and returns the result.
// It applies the guards of every path again, so nothing is read or
// planned for a path the patch may not change, whoever calls it.
func planPatch(env *Env, patch string) ([]change, error) {
	files, err := parsePatch(patch)
	if err != nil {
		return nil, err
	}
	if err := checkPatchPaths(env, files); err != nil {
		return nil, err
	}
	// state holds each path's content as the patch so far leaves it, so a
	// patch that touches one file twice applies the second part to the first's result.
	type state struct {
		existed bool
		old     string
		cur     string
		present bool
	}
	states := map[string]*state{}
	get := func(name string) (*state, error) {
		if s, ok := states[name]; ok {
			return s, nil
		}
		data, err := env.FS.ReadFile(name, MaxReadBytes)
		s := &state{}
		switch {
		case err == nil:
			if isBinary(data) {
				return nil, fmt.Errorf("%s is a binary file; apply_patch patches text only", name)
			}
			s.existed, s.present, s.old, s.cur = true, true, string(data), string(data)
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, err
		}
		states[name] = s
		return s, nil
	}
	var changes []change
	for _, f := range files {
		src := f.OldName
		if f.IsNew {
			src = f.NewName
		}
		s, err := get(src)
		if err != nil {
			return nil, err
		}
		switch {
		case f.IsNew && s.present:
			return nil, fmt.Errorf("the patch creates %s, which already exists; no file was changed", f.NewName)
		case !f.IsNew && !s.present:
			return nil, fmt.Errorf("the patch changes %s, which does not exist; no file was changed", src)
		}
		var out bytes.Buffer
		if err := gitdiff.Apply(&out, strings.NewReader(s.cur), f); err != nil {
			return nil, fmt.Errorf("the patch does not apply to %s: %v; no file was changed", src, err)
		}
		perm := fs.FileMode(0o644)
		if f.NewMode&0o111 != 0 {
			perm = 0o755
		}
		adds, dels := countLines(f)
		switch {
		case f.IsDelete:
			s.cur, s.present = "", false
			changes = append(changes, change{path: src, existed: s.existed, old: s.old, remove: true, summary: "D " + src})
		case f.IsRename:
			s.cur, s.present = "", false
			d, err := get(f.NewName)
			if err != nil {
				return nil, err
			}
			if d.present {
				return nil, fmt.Errorf("the patch renames %s onto %s, which already exists; no file was changed", src, f.NewName)
			}
			d.cur, d.present = out.String(), true
			changes = append(changes,
				change{path: f.NewName, existed: d.existed, old: d.old, new: d.cur, perm: perm, summary: fmt.Sprintf("R %s -> %s (+%d -%d)", src, f.NewName, adds, dels)},
				change{path: src, existed: s.existed, old: s.old, remove: true, summary: "  (removed " + src + ")"})
		default:
			s.cur, s.present = out.String(), true
			tag := "M"
			if f.IsNew {
				tag = "A"
			}
			changes = append(changes, change{path: f.NewName, existed: s.existed, old: s.old, new: s.cur, perm: perm, summary: fmt.Sprintf("%s %s (+%d -%d)", tag, f.NewName, adds, dels)})
		}
	}
	return changes, nil
}

func countLines(f *gitdiff.File) (adds, dels int) {
	for _, frag := range f.TextFragments {
		adds += int(frag.LinesAdded)
		dels += int(frag.LinesDeleted)
	}
	return adds, dels
}

// patchLocations resolves every path the patch changes: the files it
// writes and the files it removes (a rename does both).
func patchLocations(env *Env, files []*gitdiff.File) ([]Location, error) {
	var locs []Location
	add := func(op, name string) error {
		for _, l := range locs {
			if l.Path == name {
				return nil
			}
		}
		loc, err := locate(env, op, name)
		if err == nil {
			locs = append(locs, loc)
		}
		return err
	}
	for _, f := range files {
		var err error
		switch {
		case f.IsDelete:
			err = add("delete", f.OldName)
		case f.IsRename:
			if err = add("write", f.NewName); err == nil {
				err = add("delete", f.OldName)
			}
		default:
			err = add("write", f.NewName)
		}
		if err != nil {
			return nil, err
		}
	}
	return locs, nil
}

// commitChanges writes the planned changes (each at its pinned location,
// when the call has pins); if one fails, the ones already made are undone,
// so the workspace is left as it was.
func commitChanges(ctx context.Context, env *Env, changes []change) error {
	for i, c := range changes {
		var err error
		if c.remove {
			err = removeFile(ctx, env, c.path)
		} else {
			err = writeFile(ctx, env, c.path, []byte(c.new), c.perm)
		}
		if err == nil {
			continue
		}
		var undoErr error
		for j := i - 1; j >= 0; j-- {
			u := changes[j]
			var e error
			if u.existed {
				e = writeFile(ctx, env, u.path, []byte(u.old), 0o644)
			} else if !u.remove {
				e = removeFile(ctx, env, u.path)
			}
			if e != nil && undoErr == nil {
				undoErr = e
			}
		}
		if undoErr != nil {
			return fmt.Errorf("apply_patch failed at %s: %w; undoing the earlier files also failed: %v", c.path, err, undoErr)
		}
		return fmt.Errorf("apply_patch failed at %s: %w; no file was changed", c.path, err)
	}
	return nil
}
