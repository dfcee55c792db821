package agent

import (
	"fmt"

	"github.com/wardenhq/warden/internal/llm"
)

// Compaction keeps this much of an old tool result.
const compactKeep = 200

// estimate is a conservative token count for s: about one token per three
// bytes (English text runs near four; code, JSON and non-Latin text less).
func estimate(s string) int64 { return int64(len(s)+2) / 3 }

func estimateMsg(m llm.Message) int64 {
	n := 4 + estimate(m.Content)
	for _, c := range m.ToolCalls {
		n += 4 + estimate(c.ID) + estimate(c.Name) + estimate(c.Arguments)
	}
	return n
}

// estimateAll estimates the whole prompt: messages and tool schemas.
func (r *run) estimateAll() int64 {
	n := r.specTokens
	for _, m := range r.msgs {
		n += estimateMsg(m)
	}
	return n
}

// tokens is the best estimate of the next prompt: the larger of the
// byte-based estimate and the server's last count plus estimates of the
// messages added since.
func (r *run) tokens() int64 {
	est := r.estimateAll()
	if r.knownTokens > 0 && r.knownUpTo <= len(r.msgs) {
		known := r.knownTokens
		for _, m := range r.msgs[r.knownUpTo:] {
			known += estimateMsg(m)
		}
		est = max(est, known)
	}
	return est
}

// compact shortens the tool results of every step but the last to their
// first compactKeep bytes and returns how many it shortened. The server's
// count no longer applies afterwards.
func (r *run) compact() int {
	lastAssistant := -1
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if r.msgs[i].Role == llm.RoleAssistant {
			lastAssistant = i
			break
		}
	}
	n := 0
	for i := range r.msgs[:max(lastAssistant, 0)] {
		m := &r.msgs[i]
		if m.Role != llm.RoleTool || len(m.Content) <= compactKeep+100 {
			continue
		}
		cut := cutUTF8(m.Content, compactKeep)
		m.Content = fmt.Sprintf("%s\n[warden compacted this old tool result to save context: %d of %d bytes kept]", cut, len(cut), len(m.Content))
		n++
	}
	if n > 0 {
		r.knownTokens, r.knownUpTo = 0, 0
	}
	return n
}
