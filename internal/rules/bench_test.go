package rules

import "testing"

// BenchmarkDecide measures the rules on one call: an allow over a plain
// line (the parser only), and the same line with deny rules present (the
// shell judge too, as Decide runs it when ask/deny command rules exist).
func BenchmarkDecide(b *testing.B) {
	allow := []Spec{cmdRule(Allow, "npm", "run", "test:*"), cmdRule(Allow, "go", "test"), cmdRule(Allow, "git", "commit")}
	line := "go test ./... && npm run test:unit -- --ci 2>&1"
	for _, bc := range []struct {
		name  string
		specs []Spec
	}{
		{"allow-only", allow},
		{"with-deny", append(allow, cmdRule(Deny, "git", "push"), cmdRule(Ask, "npm", "publish"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			set, err := NewSet(bc.specs)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if set.Decide(Call{Tool: CommandTool, Command: line}).Decision != Allow {
					b.Fatal("not allowed")
				}
			}
		})
	}
}
