package hooktest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const anthropicPrefix = "toolu_warden_"

// Anthropic starts a server speaking the Anthropic Messages API as Claude
// Code calls it: POST /v1/messages (with or without ?beta=true), answered
// as server-sent events (message_start, content_block_*, message_delta,
// message_stop) or, for "stream": false, as one JSON message. Token
// counting (POST /v1/messages/count_tokens) is answered too.
func Anthropic(t testing.TB, s Script) *Server {
	return newServer(t, s, (*Server).anthropic)
}

type anthropicRequest struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, body []byte) {
	switch {
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/messages/count_tokens"):
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"input_tokens":10}`))
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/messages":
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	// The main loop offers tools; side requests (titles, summaries) do not.
	var blocks []map[string]any
	if len(req.Tools) == 0 {
		blocks = []map[string]any{{"type": "text", "text": "ok"}}
	} else {
		names := make([]string, 0, len(req.Tools))
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		s.setTools(names)
		done := 0
		for _, m := range req.Messages {
			if m.Role != "user" {
				continue
			}
			var content []map[string]any
			if json.Unmarshal(m.Content, &content) != nil {
				continue
			}
			for _, c := range content {
				if c["type"] != "tool_result" {
					continue
				}
				id, _ := c["tool_use_id"].(string)
				isErr, _ := c["is_error"].(bool)
				step := stepOf(anthropicPrefix, id)
				s.record(Result{Step: step, CallID: id, Tool: s.toolOf(step), Output: text(c["content"]), IsError: isErr})
				done++
			}
		}
		if step, ok := s.next(done); ok {
			blocks = []map[string]any{{"type": "tool_use", "id": callID(anthropicPrefix, done), "name": step.Tool, "input": step.Input}}
		} else {
			blocks = []map[string]any{{"type": "text", "text": s.final()}}
		}
	}
	stop := "end_turn"
	if blocks[0]["type"] == "tool_use" {
		stop = "tool_use"
	}
	msg := map[string]any{
		"id": "msg_warden", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
	if !req.Stream {
		msg["content"], msg["stop_reason"] = blocks, stop
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(mustJSON(msg)))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	msg["content"] = []any{}
	sse(w, "message_start", map[string]any{"type": "message_start", "message": msg})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(b["input"])}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
