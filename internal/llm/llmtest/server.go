// Package llmtest is a scripted OpenAI-compatible chat completions server
// for tests: it replays a conversation turn by turn over real HTTP
// (httptest, loopback) and records every request it received.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Turn is the server's answer to one request. Exactly one of the shapes
// applies: an HTTP error (Status ≥ 400), a hang (Delay with nothing else
// waits before answering), or a completion (Content and/or ToolCalls).
type Turn struct {
	Content   string
	ToolCalls []Call
	// PromptTokens and CompletionTokens are the usage reported; NoUsage
	// leaves the usage object out (some local servers do).
	PromptTokens, CompletionTokens int64
	NoUsage                        bool
	// Status ≥ 400 answers with that status and Body (or an OpenAI-shaped
	// error whose message is ErrorMessage); Header adds headers.
	Status       int
	ErrorMessage string
	Body         string
	Header       map[string]string
	// Delay waits before answering (or until the client goes away).
	Delay time.Duration
	// Func, when set, computes the turn from the request.
	Func func(req *Request) Turn
}

// Call is a tool call in a scripted reply.
type Call struct {
	ID, Name, Arguments string
}

// Request is what the server received.
type Request struct {
	Header http.Header
	Body   []byte
	// Parsed parts of the body.
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Tools    []ToolSpec      `json:"tools"`
	Raw      json.RawMessage `json:"-"`
}

// Message is a message as the client sent it.
type Message struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Text is the message's content as a string.
func (m Message) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case nil:
		return ""
	default:
		b, _ := json.Marshal(c)
		return string(b)
	}
}

// ToolSpec is a tool as the client offered it.
type ToolSpec struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Server replays turns in order; a request past the end gets HTTP 400
// "script exhausted", which no client retries.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	turns    []Turn
	requests []*Request
	// Repeat, when set, answers every request past the script with it.
	Repeat *Turn
	// Discard keeps only the count of requests, not the requests (for
	// benchmarks).
	Discard bool
	n       int
}

// New starts a server replaying turns. Close it when done.
func New(turns ...Turn) *Server {
	s := &Server{turns: turns}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// BaseURL is the /v1 URL clients are configured with.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns what the server received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Count is the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// SetRepeat makes every request past the script answer t.
func (s *Server) SetRepeat(t Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Repeat = &t
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := &Request{Header: r.Header.Clone(), Body: body, Raw: body}
	_ = json.Unmarshal(body, req)
	s.mu.Lock()
	n := s.n
	s.n++
	if !s.Discard {
		s.requests = append(s.requests, req)
	}
	var turn Turn
	ok := true
	switch {
	case n < len(s.turns):
		turn = s.turns[n]
	case s.Repeat != nil:
		turn = *s.Repeat
	default:
		ok = false
	}
	s.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if !ok {
		writeError(w, http.StatusBadRequest, "script exhausted", nil)
		return
	}
	if turn.Func != nil {
		turn = turn.Func(req)
	}
	if turn.Delay > 0 {
		select {
		case <-time.After(turn.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if turn.Status >= 400 {
		if turn.Body != "" {
			for k, v := range turn.Header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(turn.Status)
			_, _ = io.WriteString(w, turn.Body)
			return
		}
		writeError(w, turn.Status, turn.ErrorMessage, turn.Header)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range turn.Header {
		w.Header().Set(k, v)
	}
	if turn.Body != "" {
		_, _ = io.WriteString(w, turn.Body)
		return
	}
	_ = json.NewEncoder(w).Encode(Completion(turn, n))
}

// Completion renders turn as a chat.completion object, the documented
// /v1/chat/completions reply.
func Completion(turn Turn, n int) map[string]any {
	msg := map[string]any{"role": "assistant", "content": turn.Content}
	finish := "stop"
	if len(turn.ToolCalls) > 0 {
		var calls []map[string]any
		for i, c := range turn.ToolCalls {
			id := c.ID
			if id == "" {
				id = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i)
			}
			calls = append(calls, map[string]any{
				"id": id, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			})
		}
		msg["tool_calls"] = calls
		if turn.Content == "" {
			msg["content"] = nil
		}
		finish = "tool_calls"
	}
	out := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000,
		"model":   "scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
	}
	if !turn.NoUsage {
		out["usage"] = map[string]any{
			"prompt_tokens": turn.PromptTokens, "completion_tokens": turn.CompletionTokens,
			"total_tokens": turn.PromptTokens + turn.CompletionTokens,
		}
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string, header map[string]string) {
	w.Header().Set("Content-Type", "application/json")
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "test_error", "code": nil}})
}
