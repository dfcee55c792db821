package llm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wardenhq/warden/internal/config"
)

// Roles of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message. An assistant message may carry tool calls;
// a tool message answers the call named by ToolCallID.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a model's request to call a tool. Arguments is the JSON text
// the model wrote, unvalidated: the engine checks it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call: its name, what it does and the
// JSON Schema of its arguments.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Request is one chat completion request. With no Tools the model cannot
// call any.
type Request struct {
	Messages []Message
	Tools    []Tool
	// MaxTokens bounds the reply; 0 leaves it to the server.
	MaxTokens int
}

// Usage is the token count of one completion, as the server reported it.
type Usage struct {
	PromptTokens     int64 `json:"input"`
	CompletionTokens int64 `json:"output"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens}
}

// Total is all tokens of u.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }

// Response is the model's reply.
type Response struct {
	Message Message
	// FinishReason is the server's: stop, tool_calls, length, ...
	FinishReason string
	Usage        Usage
	// Model is the model that answered, as the server named it.
	Model string
}

// Client completes chat conversations. Implementations are safe for use by
// one goroutine at a time.
type Client interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Prices map a model name to its price in USD per million tokens
// ([llm.prices]).
type Prices map[string]config.Price

// Cost returns what u cost on model, and whether a price for model is
// known. A model is looked up by its exact name.
func (p Prices) Cost(model string, u Usage) (float64, bool) {
	pr, ok := p[model]
	if !ok {
		return 0, false
	}
	return (float64(u.PromptTokens)*pr.Input + float64(u.CompletionTokens)*pr.Output) / 1e6, true
}

// StatusError is a reply with an HTTP error status. Message is the
// server's explanation, with the API key scrubbed from it.
type StatusError struct {
	Status  int
	Message string
	// Attempts is how many requests were made, retries included.
	Attempts int
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("the model endpoint answered HTTP %d", e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Transient reports whether the status is worth retrying: 429 and 5xx.
func (e *StatusError) Transient() bool { return e.Status == 429 || e.Status >= 500 }
