package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

// The decision values are a contract: each is distinct and is written to
// JSON as the word itself.
func TestDecisions(t *testing.T) {
	t.Parallel()
	seen := map[Decision]bool{}
	for _, d := range Decisions {
		if d == "" || seen[d] {
			t.Errorf("decision %q is empty or listed twice", d)
		}
		seen[d] = true
		b, err := json.Marshal(Record{Decision: d})
		if err != nil || !json.Valid(b) || !strings.Contains(string(b), `"decision":"`+string(d)+`"`) {
			t.Errorf("%q encodes as %s (%v)", d, b, err)
		}
	}
	if b, _ := json.Marshal(Record{Event: "stop"}); strings.Contains(string(b), "decision") {
		t.Errorf("a record without a decision writes one: %s", b)
	}
}
