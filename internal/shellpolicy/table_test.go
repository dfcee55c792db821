package shellpolicy

import (
	"slices"
	"testing"

	"github.com/wardenhq/warden/internal/workspace"
)

// TestRuleTable runs every blocklist row's examples: each match example
// is blocked by the row's rule, and no notMatch example is.
func TestRuleTable(t *testing.T) {
	t.Parallel()
	ids := map[string]bool{}
	for _, row := range ruleTable {
		ids[row.id] = true
		if len(row.match) == 0 || len(row.notMatch) == 0 {
			t.Errorf("rule %s (%v) needs match and notMatch examples", row.id, row.names)
		}
		for _, jailed := range []bool{false, true} {
			for _, m := range row.match {
				v := Judge(m, testOptions(jailed))
				if !v.Blocked || v.Rule != row.id {
					t.Errorf("rule %s: %q (jailed %v) blocked=%v by %q (%s), want %s\n%s", row.id, m, jailed, v.Blocked, v.Rule, v.Reason, row.id, dump(v))
				}
			}
			for _, m := range row.notMatch {
				if v := Judge(m, testOptions(jailed)); v.Blocked && v.Rule == row.id {
					t.Errorf("rule %s: %q (jailed %v) blocked by it (%s), must not be", row.id, m, jailed, v.Reason)
				}
			}
		}
	}
	for _, id := range []string{RuleRmRecursiveRoot, RulePrivilegeEscalation, RuleChmodWorldWritable, RuleChownRecursiveSystem, RuleDownloadToInterpreter,
		RuleDDToDevice, RuleRedirectToDevice, RuleMkfs, RuleForkBomb, RuleMassKill, RulePower, RuleParseError, RuleTooComplex} {
		if !ids[id] {
			t.Errorf("rule %s has no row in ruleTable", id)
		}
	}
}

// TestSafeTable runs every safe spec's examples: each match example is
// Safe on the host, each notMatch example is not.
func TestSafeTable(t *testing.T) {
	t.Parallel()
	var walk func(s *spec)
	walk = func(s *spec) {
		if len(s.match) == 0 || len(s.notMatch) == 0 {
			t.Errorf("spec %q needs match and notMatch examples", s.name)
		}
		for _, m := range s.match {
			if v := Judge(m, testOptions(false)); v.Blocked || v.Class != Safe {
				t.Errorf("spec %q: %q is %s (blocked %v %s), want safe\n%s", s.name, m, v.Class, v.Blocked, v.Reason, dump(v))
			}
		}
		for _, m := range s.notMatch {
			if v := Judge(m, testOptions(false)); !v.Blocked && v.Class == Safe {
				t.Errorf("spec %q: %q is safe, must not be\n%s", s.name, m, dump(v))
			}
		}
		for _, sub := range s.subs {
			walk(sub)
		}
	}
	for _, s := range allSpecs() {
		walk(s)
	}
}

// TestDefaultMask keeps the judge's copy of the workspace's built-in masks
// equal to internal/workspace's.
func TestDefaultMask(t *testing.T) {
	if !slices.Equal(DefaultMask, workspace.DefaultMask) {
		t.Errorf("shellpolicy.DefaultMask = %q, workspace.DefaultMask = %q", DefaultMask, workspace.DefaultMask)
	}
}
