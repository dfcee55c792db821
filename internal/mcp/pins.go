package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// PinsFile is the name of the pinned tool definitions in the state directory.
const PinsFile = "mcp-pins.json"

// maxPinsSize bounds the pins file read.
const maxPinsSize = 4 << 20

// Pins are the tool definitions of remote MCP servers as they were first
// seen (or last trusted), by hash, kept in a small JSON file written
// atomically. A definition that differs from its pin is refused until the
// user trusts the server again (`warden mcp trust SERVER`).
type Pins struct {
	path string
	mu   sync.Mutex
}

// pinFile is the file's content.
type pinFile struct {
	Version int                   `json:"version"`
	Servers map[string]*ServerPin `json:"servers"`
}

// ServerPin is what was trusted of one server.
type ServerPin struct {
	// Endpoint is the server's URL, or its command and arguments: a pin
	// holds for the endpoint it was taken from.
	Endpoint  string            `json:"endpoint"`
	Tools     map[string]string `json:"tools"` // tool name → definition hash
	TrustedAt time.Time         `json:"trusted_at"`
}

// OpenPins returns the pins kept at path (which need not exist yet).
func OpenPins(path string) *Pins { return &Pins{path: path} }

// Path is where the pins are kept.
func (p *Pins) Path() string { return p.path }

func (p *Pins) load() (*pinFile, error) {
	f := &pinFile{Version: 1, Servers: map[string]*ServerPin{}}
	b, err := os.ReadFile(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read the MCP pins: %w", err)
	}
	if len(b) > maxPinsSize {
		return nil, fmt.Errorf("failed to read the MCP pins %s: larger than %d bytes", p.path, maxPinsSize)
	}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("failed to read the MCP pins %s: %w (fix or remove the file, then `warden mcp trust` each server)", p.path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("MCP pins %s: unknown version %d", p.path, f.Version)
	}
	if f.Servers == nil {
		f.Servers = map[string]*ServerPin{}
	}
	return f, nil
}

func (p *Pins) save(f *pinFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(p.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("failed to save the MCP pins: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".mcp-pins-*")
	if err != nil {
		return fmt.Errorf("failed to save the MCP pins: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to save the MCP pins: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("failed to save the MCP pins: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to save the MCP pins: %w", err)
	}
	if err := os.Rename(tmp.Name(), p.path); err != nil {
		return fmt.Errorf("failed to save the MCP pins: %w", err)
	}
	return nil
}

// Verdict is how a server's current definitions compare with its pins.
type Verdict struct {
	// FirstUse: nothing was pinned for the server; the definitions given
	// are now pinned.
	FirstUse bool
	// Changed lists the tools whose definition differs from its pin, or
	// that were not pinned (a tool added after the server was trusted);
	// every tool when the endpoint changed.
	Changed []string
}

// Check compares defs (tool name → definition hash) with the pins of
// server at endpoint, pinning them on first use.
func (p *Pins) Check(server, endpoint string, defs map[string]string) (Verdict, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.load()
	if err != nil {
		return Verdict{}, err
	}
	pin, ok := f.Servers[server]
	if !ok {
		f.Servers[server] = &ServerPin{Endpoint: endpoint, Tools: defs, TrustedAt: time.Now().UTC()}
		return Verdict{FirstUse: true}, p.save(f)
	}
	var v Verdict
	for name, h := range defs {
		if pin.Endpoint != endpoint || pin.Tools[name] != h {
			v.Changed = append(v.Changed, name)
		}
	}
	sort.Strings(v.Changed)
	return v, nil
}

// Trust pins defs as the definitions of server at endpoint, replacing what
// was pinned.
func (p *Pins) Trust(server, endpoint string, defs map[string]string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := p.load()
	if err != nil {
		return err
	}
	f.Servers[server] = &ServerPin{Endpoint: endpoint, Tools: defs, TrustedAt: time.Now().UTC()}
	return p.save(f)
}

// DefinitionHash is the SHA-256 of what a model reads and sends of a tool:
// name, title, description, input and output schemas and annotations, as
// canonical JSON (object keys sorted).
func DefinitionHash(t *sdk.Tool) (string, error) {
	def := struct {
		Name         string               `json:"name"`
		Title        string               `json:"title,omitempty"`
		Description  string               `json:"description,omitempty"`
		InputSchema  any                  `json:"inputSchema,omitempty"`
		OutputSchema any                  `json:"outputSchema,omitempty"`
		Annotations  *sdk.ToolAnnotations `json:"annotations,omitempty"`
	}{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations}
	b, err := json.Marshal(def)
	if err != nil {
		return "", fmt.Errorf("failed to hash the definition of tool %q: %w", t.Name, err)
	}
	// Re-decode and re-encode so key order of any nested value is canonical.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", err
	}
	if b, err = json.Marshal(v); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
