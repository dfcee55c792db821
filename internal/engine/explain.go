package engine

import (
	"context"
	"encoding/json"
)

// Explanation is what the engine would decide about a call, without
// running it or asking anyone.
type Explanation = Decision

// Explain is Decide without a context: the same decision stage Call takes
// (lookup, schema, hard guards, policy, auto-approve rules, active
// grants), and nothing after it.
func (e *Engine) Explain(name string, args json.RawMessage) Explanation {
	return e.decide(context.Background(), name, args)
}
