package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wardenhq/warden/internal/tools"
	"github.com/wardenhq/warden/internal/workspace"
)

// Host tools are the calls of an agent host that no warden tool does: they
// are registered only in the engine that decides a host's calls, so that
// policy, approvals and audit see them under a name of their own, in the
// group their effect belongs to. warden never runs them: the host does.

// The host tools.
const (
	ToolSearch       = "host_search"        // a recursive content search by the host (Grep, grep_search)
	ToolReadMany     = "host_read_many"     // Gemini CLI's read_many_files
	ToolNotebookEdit = "host_notebook_edit" // Claude Code's NotebookEdit
	ToolWebSearch    = "host_web_search"    // a web search run at the model provider
)

// MaxSearchEntries bounds the walk that looks for masked files under a
// host's recursive read; a larger tree is refused (narrow the path).
const MaxSearchEntries = 100_000

// errHostRuns is what a host tool says if warden is ever asked to run it.
var errHostRuns = errors.New("this call runs in the agent host, not in warden")

func hostRun(context.Context, *tools.Env, json.RawMessage) (string, error) {
	return "", errHostRuns
}

func objectSchema(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

func str() *jsonschema.Schema { return &jsonschema.Schema{Type: "string"} }

// HostTools returns the host tools, and for an MCP call of the host the
// tool of that name (group mcp, any arguments).
func HostTools(mcpTool string) []*tools.Tool {
	out := []*tools.Tool{
		{
			Name: ToolSearch, Description: "a recursive search of file contents run by the agent host",
			Group: tools.GroupFSRead, Annotations: tools.Annotations{ReadOnly: true},
			Schema: objectSchema(map[string]*jsonschema.Schema{"pattern": str(), "path": str(), "glob": str()}, "pattern"),
			Guard:  guardSearch, Run: hostRun,
		},
		{
			Name: ToolReadMany, Description: "files read by the agent host by name or glob",
			Group: tools.GroupFSRead, Annotations: tools.Annotations{ReadOnly: true},
			Schema: objectSchema(map[string]*jsonschema.Schema{"include": {Type: "array", Items: str(), MinItems: jsonschema.Ptr(1)},
				"exclude": {Type: "array", Items: str()}}, "include"),
			Guard: guardReadMany, Run: hostRun,
		},
		{
			Name: ToolNotebookEdit, Description: "a notebook cell edit by the agent host",
			Group: tools.GroupFSWrite, Sensitive: true, Annotations: tools.Annotations{Destructive: true},
			Schema: objectSchema(map[string]*jsonschema.Schema{"path": str(), "new_source": str(), "cell_id": str(), "cell_type": str(), "edit_mode": str()}, "path"),
			Guard: func(env *tools.Env, raw json.RawMessage) (tools.Facts, error) {
				var a struct{ Path, EditMode string }
				if err := json.Unmarshal(raw, &a); err != nil {
					return tools.Facts{}, err
				}
				return tools.Facts{Risk: "notebook " + a.Path + " (" + a.EditMode + ")"}, env.Root.Check("write", a.Path, true)
			},
			Run: hostRun,
		},
		{
			Name: ToolWebSearch, Description: "a web search the model provider runs for the agent host",
			Group: tools.GroupNetwork, Sensitive: true, Annotations: tools.Annotations{OpenWorld: true},
			Schema: objectSchema(map[string]*jsonschema.Schema{"query": str()}, "query"),
			Run:    hostRun,
		},
	}
	if mcpTool != "" {
		out = append(out, &tools.Tool{
			Name: mcpTool, Description: "a tool of an MCP server of the agent host",
			Group: tools.GroupMCP, Sensitive: true, Annotations: tools.Annotations{OpenWorld: true},
			Schema: &jsonschema.Schema{Type: "object"}, Run: hostRun,
		})
	}
	return out
}

// guardSearch refuses a host's recursive search that would read a masked
// file: the host's own search does not skip warden's masks.
func guardSearch(env *tools.Env, raw json.RawMessage) (tools.Facts, error) {
	var a struct{ Pattern, Path, Glob string }
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Facts{}, err
	}
	p := a.Path
	if p == "" {
		p = "."
	}
	if err := env.Root.Check("read", p, false); err != nil {
		return tools.Facts{}, err
	}
	return tools.Facts{Risk: fmt.Sprintf("search %q under %s", a.Pattern, p)}, noMaskedUnder(env.Root, p, func(rel string) bool {
		if a.Glob == "" {
			return true
		}
		ok, _ := doublestar.Match(a.Glob, filepath.Base(rel))
		ok2, _ := doublestar.Match(a.Glob, rel)
		return ok || ok2
	})
}

// guardReadMany refuses read_many_files when a name or a glob it reads
// leads out of the workspace or to a masked file.
func guardReadMany(env *tools.Env, raw json.RawMessage) (tools.Facts, error) {
	var a struct{ Include, Exclude []string }
	if err := json.Unmarshal(raw, &a); err != nil {
		return tools.Facts{}, err
	}
	var globs []string
	for _, p := range a.Include {
		if !strings.ContainsAny(p, "*?[{") {
			if err := env.Root.Check("read", p, false); err != nil {
				return tools.Facts{}, err
			}
			if err := noMaskedUnder(env.Root, p, nil); err != nil {
				return tools.Facts{}, err
			}
			continue
		}
		if err := env.Root.Check("read", p, false); err != nil && !errors.Is(err, workspace.ErrMasked) {
			return tools.Facts{}, err
		}
		globs = append(globs, p)
	}
	if len(globs) == 0 {
		return tools.Facts{}, nil
	}
	return tools.Facts{}, noMaskedUnder(env.Root, ".", func(rel string) bool {
		for _, g := range globs {
			if ok, _ := doublestar.Match(strings.TrimPrefix(g, "./"), rel); ok {
				return true
			}
		}
		return false
	})
}

// noMaskedUnder walks rel (a directory or a file of the workspace) and
// refuses when a file there that match selects (nil: every file) is masked.
// It does not follow symbolic links, as a host's search does not.
func noMaskedUnder(root *workspace.Root, rel string, match func(rel string) bool) error {
	base := filepath.Join(root.Dir(), filepath.FromSlash(rel))
	n := 0
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == base {
				return fs.SkipAll
			}
			return nil // unreadable: the host cannot read it either
		}
		if n++; n > MaxSearchEntries {
			return fmt.Errorf("%s holds more than %d entries, too many to check for masked files; search a narrower path", rel, MaxSearchEntries)
		}
		r, err := filepath.Rel(root.Dir(), p)
		if err != nil || r == "." {
			return nil
		}
		r = filepath.ToSlash(r)
		rule, masked := root.MaskRule(r)
		if !masked {
			return nil
		}
		if d.IsDir() || match == nil || match(r) {
			return &workspace.PathError{Op: "read", Path: r, Rule: rule, Err: fmt.Errorf("%w; the host's search would read it: search a path without it, or use warden's grep tool, which skips masked files", workspace.ErrMasked)}
		}
		return nil
	})
	return err
}
