package config

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wardenhq/warden/internal/rules"
)

// loadBytes runs one document through the whole load path as a user config
// (no file system), then the checks of the merged configuration.
func loadBytes(name string, data []byte) (*Config, error) {
	ld := &loader{getenv: noEnv, cfg: Default(), origin: map[string]string{}}
	if l := ld.parse(name, data, "user"); l != nil && len(l.errs.list) == 0 {
		ld.apply(l, "user")
	}
	ld.final()
	if len(ld.errs) > 0 {
		return nil, &Errors{List: ld.errs}
	}
	return ld.cfg, nil
}

// checkInvariants is every range and value rule, stated on the result: a
// configuration that loads must satisfy all of them.
func checkInvariants(c *Config) error {
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	switch {
	case !in(c.Commands.DefaultTimeout, 1, 600), !in(c.Commands.MaxTimeout, 1, 600), c.Commands.DefaultTimeout > c.Commands.MaxTimeout:
		return fmt.Errorf("command timeouts %d/%d", c.Commands.DefaultTimeout, c.Commands.MaxTimeout)
	case !in(c.Commands.MaxOutputLines, 10, 5000):
		return fmt.Errorf("max_output_lines %d", c.Commands.MaxOutputLines)
	case modeRank[c.Security.ConfirmMode] == 0 && c.Security.ConfirmMode != ModeYolo:
		return fmt.Errorf("confirm_mode %q", c.Security.ConfirmMode)
	case !in(c.Security.Approval.TimeoutSecs, 1, 86400):
		return fmt.Errorf("approval timeout %d", c.Security.Approval.TimeoutSecs)
	case c.Security.Approval.OnTimeout != PolicyDeny && c.Security.Approval.OnTimeout != PolicyAllow:
		return fmt.Errorf("on_timeout %q", c.Security.Approval.OnTimeout)
	case !in(c.Security.HTTP.TimeoutSecs, 1, 300):
		return fmt.Errorf("http timeout %d", c.Security.HTTP.TimeoutSecs)
	case !in(c.LLM.Retries, 0, 10):
		return fmt.Errorf("retries %d", c.LLM.Retries)
	}
	for _, p := range c.Commands.BlockedPatterns {
		if _, err := regexp.Compile(p); err != nil {
			return err
		}
	}
	policies := []string{PolicyAllow, PolicyDeny, PolicySupervised}
	tp := c.Security.ToolPolicy
	if tp.Default != "" && !slices.Contains(policies, tp.Default) {
		return fmt.Errorf("default policy %q", tp.Default)
	}
	for t, p := range tp.Tools {
		if n, ok := NormalizeTool(t); !ok || n != t || !slices.Contains(policies, p) {
			return fmt.Errorf("tool policy %q = %q", t, p)
		}
	}
	for _, p := range tp.Groups {
		if !slices.Contains(policies, p) {
			return fmt.Errorf("group policy %q", p)
		}
	}
	for _, r := range c.Security.Approval.AutoApprove {
		if n, ok := NormalizeTool(r.Tool); !ok || n != r.Tool || r.Line < 1 {
			return fmt.Errorf("auto_approve %+v", r)
		}
		for _, p := range []string{r.CommandPattern, r.PathPattern, r.URLPattern, r.ArgsPattern} {
			if _, err := regexp.Compile(p); err != nil {
				return err
			}
		}
	}
	for _, h := range c.Hooks.PostEdit {
		if !in(h.Timeout, 1, 300) || h.Command == "" {
			return fmt.Errorf("hook %+v", h)
		}
	}
	if s := c.Sandbox; s != nil {
		if s.Invalid != "" && (!s.Enabled || !s.Lockdown) {
			return fmt.Errorf("invalid sandbox not in lockdown: %+v", s)
		}
		if s.Invalid == "" && (!slices.Contains(sandboxBackends, s.Backend) || landlockRank[s.Landlock] == 0 && s.Landlock != "off" || s.IdleTimeout < 1) {
			return fmt.Errorf("sandbox %+v", s)
		}
	}
	names := map[string]bool{}
	for _, s := range c.MCP.Servers {
		if names[s.Name] || !namePattern.MatchString(s.Name) || (s.URL == "") == (s.Command == "") || !in(s.Timeout, 1, 600) {
			return fmt.Errorf("mcp server %+v", s)
		}
		names[s.Name] = true
	}
	for i, r := range c.Rules {
		spec, err := r.Spec()
		if err != nil {
			return fmt.Errorf("rule %d: %v", i, err)
		}
		cr, err := rules.Compile(spec)
		if err != nil {
			return fmt.Errorf("rule %d does not compile: %v", i, err)
		}
		if _, err := cr.CheckExamples(r.Match, r.NotMatch); err != nil {
			return fmt.Errorf("rule %d loaded with a failing example: %v", i, err)
		}
	}
	for name, a := range c.Agents {
		if a.ConfirmMode != "" && modeRank[a.ConfirmMode] == 0 && a.ConfirmMode != ModeYolo {
			return fmt.Errorf("agent %s mode %q", name, a.ConfirmMode)
		}
		for _, t := range a.AllowedTools {
			if n, ok := NormalizeTool(t); !ok || n != t {
				return fmt.Errorf("agent %s tool %q", name, t)
			}
		}
	}
	return nil
}

func fuzzDecode(f *testing.F, format string, seeds []string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, tc := range validationCases {
		f.Add([]byte(map[string]string{"toml": tc.toml, "yaml": tc.yaml}[format]))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		name := "f." + format
		c, err := loadBytes(name, data)
		if err != nil {
			for _, e := range errorList(t, err) {
				if e.File != name || e.Msg == "" {
					t.Fatalf("error without its file or message: %#v", e)
				}
			}
			return
		}
		if err := checkInvariants(c); err != nil {
			t.Fatalf("loaded a configuration that breaks an invariant: %v\n%s", err, data)
		}
		// Differential: what the positioned decoder accepts, the library's
		// strict decoder accepts too, with the same values.
		var root *node
		if format == "toml" {
			root, err = parseTOML(name, data)
		} else {
			root, err = parseYAML(name, data)
		}
		if err != nil {
			t.Fatalf("loaded but does not parse: %v", err)
		}
		l := decodeLayer(name, root)
		if len(l.errs.list)+len(l.sandboxErrs.list) > 0 {
			return
		}
		lib, err := libDecode(format, data)
		if err != nil {
			t.Fatalf("warden accepts what the library refuses: %v\n%q", err, data)
		}
		if sb := root.field["sandbox"]; sb != nil && sb.kind == kNull && lib.Sandbox == nil {
			// Deliberate difference: "sandbox:" with no value still opts in
			// (the safe reading); yaml.v3 leaves the pointer nil.
			lib.Sandbox = &Sandbox{}
		}
		if diff := cmp.Diff(lib, l.cfg, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("library and warden disagree (-lib +warden):\n%s\n%q", diff, data)
		}
	})
}

func FuzzDecodeTOML(f *testing.F) {
	fuzzDecode(f, "toml", []string{fullTOML, "", "[sandbox]\nbackend = 1\n", "a.b.c = 1\n[a]\n", "[[hooks.post_edit]]\n[[hooks.post_edit]]\ncommand='x'\n",
		"[security.tool_policy]\ntools = {terminal = 'deny', run_command = 'deny'}\n", "commands = {enabled = false}\n",
		"[[rules]]\ncommand = ['npm', 'run', 'test:*']\ndecision = 'allow'\nmatch = ['npm run test:unit']\nnot_match = ['npm run test-evil']\n",
		"[[rules]]\ntool = 'write_file'\npath = 'docs/**'\ndecision = 'allow'\nworkspace = '/w'\nid = 'always-1'\n[[rules]]\nhost = '*.x.org'\ndecision = 'ask'\n"})
}

func FuzzDecodeYAML(f *testing.F) {
	fuzzDecode(f, "yaml", []string{fullYAML, "", "sandbox: ~\n", "commands:\n  enabled: yes\n", "a: &x 1\nb: *x\n", "1: 2\n",
		"security:\n  tool_policy:\n    tools: {terminal: deny, shell: deny}\n", "--- \n...\n",
		"rules:\n  - command: [git, push]\n    decision: deny\n    match: ['bash -c \"git push\"']\n"})
}
