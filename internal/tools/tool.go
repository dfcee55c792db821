package tools

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
)

// Result is what every tool call returns to its caller, whatever happened.
// A refusal or a failure is a Result with Success false and an Error written
// for the model to read and act on; it is never a Go error.
type Result struct {
	Success bool   `json:"success"`
	Output  string `json:"output"`
	Error   string `json:"error,omitempty"`
	// Stop means a person asked to stop the whole run (an agent loop ends
	// after this call); it is not part of the JSON a caller sees.
	Stop bool `json:"-"`
}

// Annotations are the MCP tool hints (readOnlyHint, destructiveHint, ...).
type Annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

// Built-in tool groups.
const (
	GroupFSRead  = "fs_read"
	GroupFSWrite = "fs_write"
	GroupShell   = "shell"
	GroupNetwork = "network"
	GroupMCP     = "mcp"
)

// Tool describes one tool: its contract (name, schema, hints) and its code.
// Run receives arguments that already passed schema validation and every
// hard guard the engine applies; it still confines every path through the
// workspace, which is the guard that cannot be skipped.
type Tool struct {
	Name        string
	Description string
	Group       string
	// Sensitive tools are supervised under confirm-sensitive.
	Sensitive   bool
	Annotations Annotations
	// Schema is the JSON Schema of the arguments. Extra fields are rejected:
	// every schema sets additionalProperties to false.
	Schema *jsonschema.Schema
	// Run performs the call. An error is the tool's failure, written for the model.
	Run func(ctx context.Context, env *Env, args json.RawMessage) (string, error)
	// Guard applies the tool's own hard guards (delete protection, the
	// command blocklist, confinement of the paths it names) before any policy
	// or approval, so a call a guard refuses is never put to a person. It
	// returns facts that policy and approvals read. nil: no extra guard.
	Guard func(env *Env, args json.RawMessage) (Facts, error)
	// Preview describes what the call would change (a unified diff for an
	// edit), for a person deciding an approval. nil: none.
	Preview func(ctx context.Context, env *Env, args json.RawMessage) (string, error)
	// Edits reports the workspace-relative files a successful call changed,
	// for post-edit hooks; nil for tools that edit nothing.
	Edits func(args json.RawMessage) []string
}

// Facts are what a tool's guard learned about a call.
type Facts struct {
	// CommandClass is "safe", "dev" or "dangerous" for run_command.
	CommandClass string
	// Risk is a human summary of the call for approvals (a command's parse).
	Risk string
	// Locations are the places the call changes, resolved when it is
	// judged: for a person deciding (where one differs from its name), for
	// the approval's binding, and to pin the change to (WithPins).
	Locations []Location
}

// Registry holds the tools available to an engine, by name.
type Registry struct {
	byName map[string]*Tool
}

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...*Tool) *Registry {
	r := &Registry{byName: make(map[string]*Tool)}
	for _, t := range tools {
		r.Add(t)
	}
	return r
}

// Add registers t, replacing any tool of the same name.
func (r *Registry) Add(t *Tool) { r.byName[t.Name] = t }

// Remove unregisters the tool called name.
func (r *Registry) Remove(name string) { delete(r.byName, name) }

// Get returns the tool called name.
func (r *Registry) Get(name string) (*Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// List returns the tools sorted by name.
func (r *Registry) List() []*Tool {
	out := make([]*Tool, 0, len(r.byName))
	for _, t := range r.byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
