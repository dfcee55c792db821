// Package hooktest holds scripted model servers for end-to-end tests of
// agent hosts (Claude Code, Codex, Gemini CLI) driven offline: each speaks
// the real API its host calls — Anthropic Messages (POST /v1/messages,
// server-sent events), OpenAI Responses (POST /v1/responses, streamed) and
// Gemini (:generateContent and :streamGenerateContent?alt=sse) — on
// loopback, asks for the tool calls of a Script one turn at a time, and
// records the tool results the host sends back, so a test can check what
// reached the model.
//
// A hosted model API cannot be reached from the test machine; these
// servers stand in for it and nothing else. Requests that are not the main
// agent loop (titles, summaries, classifiers) get a short text answer.
package hooktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Step is one tool call the scripted model asks for.
type Step struct {
	Tool  string
	Input map[string]any
}

// Script is what the model does: ask for each step's tool call in turn,
// each after the result of the one before, then answer Final.
type Script struct {
	Steps []Step
	Final string
	// Before, when set, runs before the server asks for step i (after the
	// result of step i-1 came back), e.g. to approve a request meanwhile.
	Before func(i int)
}

// Result is a tool result the host sent back to the model.
type Result struct {
	// Step is the index of the scripted step it answers.
	Step    int
	CallID  string
	Tool    string
	Output  string
	IsError bool
}

// Server is a scripted model server.
type Server struct {
	URL    string
	script Script
	srv    *httptest.Server

	mu       sync.Mutex
	results  map[string]Result
	order    []string
	tools    []string // tool names offered by the last main-loop request
	requests []string // path of every request
	bodies   [][]byte
	before   map[int]bool // steps Before ran for
}

func newServer(t testing.TB, s Script, h func(*Server, http.ResponseWriter, *http.Request, []byte)) *Server {
	t.Helper()
	srv := &Server{script: s, results: map[string]Result{}}
	srv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		srv.mu.Lock()
		srv.requests = append(srv.requests, r.Method+" "+r.URL.RequestURI())
		srv.bodies = append(srv.bodies, body)
		srv.mu.Unlock()
		h(srv, w, r, body)
	}))
	srv.URL = srv.srv.URL
	t.Cleanup(srv.srv.Close)
	return srv
}

// Results returns the tool results received, in the order they arrived.
func (s *Server) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Result, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.results[id])
	}
	return out
}

// ResultOf returns the result of step i, if it came back.
func (s *Server) ResultOf(i int) (Result, bool) {
	for _, r := range s.Results() {
		if r.Step == i {
			return r, true
		}
	}
	return Result{}, false
}

// Tools returns the tool names the host offered the model (last request of
// the main loop).
func (s *Server) Tools() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tools...)
}

// Requests returns the method and path of every request received.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Dump describes what the server saw, for a failing test's log.
func (s *Server) Dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "requests: %q\ntools offered: %q\n", s.requests, s.tools)
	for _, id := range s.order {
		r := s.results[id]
		fmt.Fprintf(&b, "result of step %d (%s %s, error=%v): %.600s\n", r.Step, r.Tool, r.CallID, r.IsError, r.Output)
	}
	return b.String()
}

// record stores a tool result (once per call id) and the step it answers.
func (s *Server) record(r Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.results[r.CallID]; ok {
		return
	}
	s.results[r.CallID] = r
	s.order = append(s.order, r.CallID)
}

func (s *Server) setTools(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = names
}

// callID is the id of step i's tool call: the step is read back from it.
func callID(prefix string, i int) string { return fmt.Sprintf("%s%d", prefix, i) }

func stepOf(prefix, id string) int {
	var i int
	if _, err := fmt.Sscanf(strings.TrimPrefix(id, prefix), "%d", &i); err != nil || !strings.HasPrefix(id, prefix) {
		return -1
	}
	return i
}

// next is the step to answer with, given how many results came back.
func (s *Server) next(done int) (Step, bool) {
	if s.script.Before != nil {
		s.mu.Lock()
		first := !s.before[done]
		if s.before == nil {
			s.before = map[int]bool{}
		}
		s.before[done] = true
		s.mu.Unlock()
		if first {
			s.script.Before(done)
		}
	}
	if done < len(s.script.Steps) {
		return s.script.Steps[done], true
	}
	return Step{}, false
}

func (s *Server) final() string {
	if s.script.Final != "" {
		return s.script.Final
	}
	return "done"
}

func (s *Server) toolOf(i int) string {
	if i >= 0 && i < len(s.script.Steps) {
		return s.script.Steps[i].Tool
	}
	return ""
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sse writes one server-sent event.
func sse(w http.ResponseWriter, event string, data any) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", mustJSON(data))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// text returns the text of a tool result's content, whatever its shape: a
// string, or a list of blocks with "text".
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, p := range x {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
					continue
				}
			}
			parts = append(parts, mustJSON(p))
		}
		return strings.Join(parts, "\n")
	case nil:
		return ""
	}
	return mustJSON(v)
}

// Seen reports whether any request the server received contained s: a
// tool the host lists to the model in its prompt or its tool list.
func (s *Server) Seen(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		if strings.Contains(string(b), sub) {
			return true
		}
	}
	return false
}

// LastBody returns the body of the last request received.
func (s *Server) LastBody() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) == 0 {
		return nil
	}
	return s.bodies[len(s.bodies)-1]
}
