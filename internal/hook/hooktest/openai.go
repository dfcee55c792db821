package hooktest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

const openaiPrefix = "call_warden_"

// OpenAIResponses starts a server speaking the OpenAI Responses API as
// Codex calls it: POST /v1/responses with "stream": true, answered as
// server-sent events (response.created, response.output_item.added/done,
// response.completed). A step whose Tool is "apply_patch" is asked for as a
// custom (freeform) tool call with Input["input"] as its text, as Codex
// defines that tool; every other step is a function call with Input as its
// JSON arguments; a step named mcp__S__T is called as T in namespace mcp__S,
// as Codex offers MCP tools. GET /v1/models lists one model.
func OpenAIResponses(t testing.TB, s Script) *Server {
	return newServer(t, s, (*Server).openai)
}

type responsesRequest struct {
	Model string            `json:"model"`
	Input []json.RawMessage `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

func (s *Server) openai(w http.ResponseWriter, r *http.Request, body []byte) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"id":"warden-test","object":"model","created":0,"owned_by":"warden"}],"models":[]}`))
		return
	case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses"):
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	var item map[string]any
	if len(req.Tools) == 0 {
		item = textItem("ok")
	} else {
		names := make([]string, 0, len(req.Tools))
		for _, tl := range req.Tools {
			names = append(names, tl.Name)
		}
		s.setTools(names)
		done := 0
		for _, raw := range req.Input {
			var it map[string]any
			if json.Unmarshal(raw, &it) != nil {
				continue
			}
			switch it["type"] {
			case "function_call_output", "custom_tool_call_output":
				id, _ := it["call_id"].(string)
				out := it["output"]
				// Codex sends a function's output as a string, or as an
				// object {content, success}.
				isErr := false
				if m, ok := out.(map[string]any); ok {
					if ok, present := m["success"].(bool); present && !ok {
						isErr = true
					}
					out = m["content"]
				}
				step := stepOf(openaiPrefix, id)
				s.record(Result{Step: step, CallID: id, Tool: s.toolOf(step), Output: text(out), IsError: isErr})
				done++
			}
		}
		if step, ok := s.next(done); ok {
			id := callID(openaiPrefix, done)
			if step.Tool == "apply_patch" {
				input, _ := step.Input["input"].(string)
				item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + id, "call_id": id, "name": step.Tool, "input": input, "status": "completed"}
			} else {
				item = map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": step.Tool,
					"arguments": mustJSON(step.Input), "status": "completed"}
				// Codex offers MCP tools in a namespace per server (mcp__S
				// holding T); the model calls them by name within it.
				if i := strings.LastIndex(step.Tool, "__"); strings.HasPrefix(step.Tool, "mcp__") && i > len("mcp_") {
					item["namespace"], item["name"] = step.Tool[:i], step.Tool[i+2:]
				}
			}
		} else {
			item = textItem(s.final())
		}
	}
	resp := map[string]any{
		"id": "resp_warden", "object": "response", "created_at": time.Now().Unix(), "status": "in_progress",
		"model": req.Model, "output": []any{},
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	seq := 0
	emit := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		sse(w, typ, data)
	}
	emit("response.created", map[string]any{"response": resp})
	emit("response.output_item.added", map[string]any{"output_index": 0, "item": item})
	emit("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	resp["status"], resp["output"] = "completed", []any{item}
	resp["usage"] = map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 11}
	emit("response.completed", map[string]any{"response": resp})
}

func textItem(t string) map[string]any {
	return map[string]any{"type": "message", "id": "msg_warden", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": t, "annotations": []any{}}}}
}
