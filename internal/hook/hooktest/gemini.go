package hooktest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Gemini starts a server speaking the Gemini API as Gemini CLI calls it:
// POST /v1beta/models/MODEL:generateContent (one JSON answer) and
// :streamGenerateContent?alt=sse (server-sent events, one chunk), plus
// :countTokens. Function calls carry an id, and results are matched by it,
// or by order when the client sends none.
func Gemini(t testing.TB, s Script) *Server {
	return newServer(t, s, (*Server).gemini)
}

const geminiPrefix = "gemini_warden_"

type geminiRequest struct {
	Contents []struct {
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"totalTokens":10}`))
		return
	case r.Method != http.MethodPost || !(strings.HasSuffix(path, ":generateContent") || strings.HasSuffix(path, ":streamGenerateContent")):
		http.Error(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`, http.StatusNotFound)
		return
	}
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
		return
	}
	var names []string
	for _, tl := range req.Tools {
		for _, f := range tl.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	var part map[string]any
	if len(names) == 0 {
		// Side requests (routing, next-speaker checks) ask for JSON or text.
		part = map[string]any{"text": `{"reasoning":"scripted","next_speaker":"user","model_choice":"flash"}`}
	} else {
		s.setTools(names)
		done := 0
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				fr, ok := p["functionResponse"].(map[string]any)
				if !ok {
					continue
				}
				id, _ := fr["id"].(string)
				step := stepOf(geminiPrefix, id)
				if step < 0 {
					step, id = done, callID(geminiPrefix, done)
				}
				resp, _ := fr["response"].(map[string]any)
				out := resp["output"]
				isErr := false
				if e, ok := resp["error"]; ok && e != nil {
					out, isErr = e, true
				}
				if out == nil {
					out = resp
				}
				s.record(Result{Step: step, CallID: id, Tool: s.toolOf(step), Output: text(out), IsError: isErr})
				done++
			}
		}
		if step, ok := s.next(done); ok {
			part = map[string]any{"functionCall": map[string]any{"id": callID(geminiPrefix, done), "name": step.Tool, "args": step.Input}}
		} else {
			part = map[string]any{"text": s.final()}
		}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
		"modelVersion":  "gemini-2.5-flash",
	}
	if strings.HasSuffix(path, ":streamGenerateContent") {
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "", resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(mustJSON(resp)))
}
