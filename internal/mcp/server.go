package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/tools"
)

// Engine runs tool calls through warden's pipeline; *engine.Engine is one.
// Call never fails with a Go error: a refusal is a Result.
type Engine interface {
	Tools() []*tools.Tool
	Call(ctx context.Context, name string, args json.RawMessage) tools.Result
}

// ProtocolVersions are the MCP revisions warden serves. Revisions from
// 2026-07-28 on are stateless and forbid a server-initiated elicitation
// while a call is running, which is how warden asks for an approval in the
// client; a client offering them falls back to the newest listed here.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// stackForCall is the stack a tool call grows to at its start (growStack).
const stackForCall = 64 << 10

// DefaultProgressInterval is how often a running call reports progress.
const DefaultProgressInterval = 2 * time.Second

// ServerOptions configure NewServer. The zero value is usable.
type ServerOptions struct {
	// ForSession returns the engine for one MCP session; session is the id
	// the audit trail records for its calls. nil: every session uses the
	// engine passed to NewServer (stdio: one session per process).
	ForSession func(session string) (Engine, error)
	// Logger receives human notes; nil discards them.
	Logger *slog.Logger
	// ProgressInterval is how often a call that carries a progress token
	// gets a progress notification while it runs (an approval wait, a long
	// command); default DefaultProgressInterval.
	ProgressInterval time.Duration
	// Version is the server version reported to clients.
	Version string
	// ApprovalWait is how long a supervised call waits for a person before
	// it answers the model with the request id, that a person has been
	// asked and that the same call can be made again; the request stays
	// pending, and the same call made again waits on it, or runs once if it
	// was approved meanwhile (config security.approval.mcp_wait_secs).
	// Clients give up on a call after about 60 s (the TypeScript SDK's
	// default, Codex's tool_timeout_sec), so this stays below that.
	// Default DefaultApprovalWait.
	ApprovalWait time.Duration
}

// DefaultApprovalWait is ServerOptions.ApprovalWait's default.
const DefaultApprovalWait = 50 * time.Second

// server exposes an engine's tools over MCP.
type server struct {
	eng  Engine
	opts ServerOptions
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*sessionEngine
}

type sessionEngine struct {
	id  string
	eng Engine
	err error
}

// NewServer returns an MCP server exposing every tool of eng with its JSON
// Schema and annotations. Every call goes through eng.Call; a refusal is a
// tool result with isError set and the reason as its text, never a
// protocol error.
func NewServer(eng Engine, opts *ServerOptions) *sdk.Server {
	s := &server{eng: eng, sessions: map[*sdk.ServerSession]*sessionEngine{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.ProgressInterval <= 0 {
		s.opts.ProgressInterval = DefaultProgressInterval
	}
	if s.opts.ApprovalWait <= 0 {
		s.opts.ApprovalWait = DefaultApprovalWait
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	version := s.opts.Version
	if version == "" {
		version = "dev"
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "warden", Version: version}, &sdk.ServerOptions{
		Instructions: "warden runs these tools inside the lines its user drew: workspace confinement, " +
			"command policy, approvals and audit. A refused call comes back as an error result that says why; " +
			"do not retry a refused call unchanged.",
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		GetSessionID:              NewSessionID,
		SupportedProtocolVersions: ProtocolVersions,
	})
	for _, t := range eng.Tools() {
		srv.AddTool(ToolDef(t), s.handler(t.Name))
	}
	return srv
}

// ToolDef is t as an MCP tool definition: its schema and its hints.
func ToolDef(t *tools.Tool) *sdk.Tool {
	destructive, openWorld := t.Annotations.Destructive, t.Annotations.OpenWorld
	return &sdk.Tool{
		Name:        t.Name,
		Description: t.Description,
		InputSchema: t.Schema,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    t.Annotations.ReadOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.Annotations.Idempotent,
			OpenWorldHint:   &openWorld,
		},
	}
}

// NewSessionID returns an unguessable MCP session id: "mcp-" and 128
// random bits in hex.
func NewSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	return "mcp-" + hex.EncodeToString(b[:])
}

// engineFor returns the engine and audit session id of ss, made once.
func (s *server) engineFor(ss *sdk.ServerSession) *sessionEngine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.sessions[ss]; ok {
		return se
	}
	se := &sessionEngine{id: ss.ID(), eng: s.eng}
	if s.opts.ForSession != nil {
		if se.id == "" {
			se.id = NewSessionID()
		}
		se.eng, se.err = s.opts.ForSession(se.id)
	}
	s.sessions[ss] = se
	s.log.Info("mcp session started", "session", ShortID(se.id))
	go func() {
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
		s.log.Info("mcp session ended", "session", ShortID(se.id))
	}()
	return se
}

func (s *server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		se := s.engineFor(req.Session)
		if se.err != nil {
			return errorResult(fmt.Sprintf("warden could not start this session: %v", se.err)), nil
		}
		c := &callInfo{session: req.Session, sessionID: se.id, tool: name}
		ctx = context.WithValue(ctx, callKey{}, c)
		// A client that gives up (its timeout, a cancel) does not cancel a
		// request a person may still decide: it stays pending for the same
		// call made again (approval.Request.MaxWait).
		ctx = approval.WithMaxWait(ctx, s.opts.ApprovalWait)
		stop := s.progress(ctx, req, c)
		growStack(0)
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		res := se.eng.Call(ctx, name, args)
		stop()
		return toResult(res), nil
	}
}

// progress sends a progress notification every interval while the call
// runs, when the client asked for them with a progress token.
func (s *server) progress(ctx context.Context, req *sdk.CallToolRequest, c *callInfo) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return func() {}
	}
	c.progress = func(msg string) {
		c.mu.Lock()
		c.ticks++
		n := c.ticks
		c.mu.Unlock()
		err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: msg})
		if err != nil && ctx.Err() == nil {
			s.log.Debug("progress notification failed", "err", err)
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTicker(s.opts.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				c.progress(c.status(time.Since(start)))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// toResult is r as an MCP tool result: the error text first, then the
// output, with isError when the call did not succeed.
func toResult(r tools.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{IsError: !r.Success}
	if r.Error != "" {
		out.Content = append(out.Content, &sdk.TextContent{Text: r.Error})
	}
	if r.Output != "" || len(out.Content) == 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: r.Output})
	}
	return out
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// callKey carries the *callInfo of a tool call in its context, for the
// approval channels of this package.
type callKey struct{}

// callInfo is one tool call from an MCP session.
type callInfo struct {
	session   *sdk.ServerSession
	sessionID string
	tool      string
	progress  func(msg string) // nil without a progress token

	mu      sync.Mutex
	ticks   int
	pending string // the approval request the call waits for
}

func callFrom(ctx context.Context) *callInfo {
	c, _ := ctx.Value(callKey{}).(*callInfo)
	return c
}

func (c *callInfo) status(elapsed time.Duration) string {
	c.mu.Lock()
	id := c.pending
	c.mu.Unlock()
	secs := elapsed.Round(time.Second)
	if id != "" {
		return fmt.Sprintf("%s: waiting %s for approval request %s (warden approvals approve %s | deny %s --reason R)", c.tool, secs, id, id, id)
	}
	return fmt.Sprintf("%s: running for %s", c.tool, secs)
}

// canElicit reports whether the client of the call can be asked through
// MCP elicitation (a form).
func (c *callInfo) canElicit() bool {
	if c == nil || c.session == nil {
		return false
	}
	p := c.session.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil &&
		(p.Capabilities.Elicitation.Form != nil || p.Capabilities.Elicitation.URL == nil)
}

// ShortID is id cut to 12 characters, as session ids are logged.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Serve runs srv on t (StdioTransport for `warden mcp`) until the client
// disconnects or ctx ends.
func Serve(ctx context.Context, srv *sdk.Server, t sdk.Transport) error {
	return srv.Run(ctx, t)
}

// growStack grows the calling goroutine's stack to what a call needs in one
// step while the stack is still shallow. The SDK runs every call on a new
// goroutine (8 KiB of stack), and the audit append through SQLite goes deep:
// grown by doubling, the stack was copied (frame by frame) several times
// per call.
//
//go:noinline
func growStack(i int) byte {
	var b [stackForCall]byte
	b[i] = 1
	return b[len(b)-1-i]
}
