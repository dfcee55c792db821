package rules

import "fmt"

// ExampleError is an example of a rule that does not behave as written:
// a match example the rule does not decide, or a not_match example it does.
type ExampleError struct {
	Example string
	Match   bool // it was listed under match
	Rule    *Rule
	Why     string
}

func (e *ExampleError) Error() string {
	if e.Match {
		msg := fmt.Sprintf("match example %q is not decided by this rule (%s)", e.Example, e.Rule)
		if e.Why != "" {
			msg += ": " + e.Why
		}
		return msg
	}
	return fmt.Sprintf("not_match example %q is decided by this rule (%s)", e.Example, e.Rule)
}

// Matches reports whether r alone decides the example: a command line for
// a command rule (run as Decide would, the line judged with the built-in
// policy), a path for a path rule, a host for a host rule.
func (r *Rule) Matches(example string) (bool, string) {
	s := &Set{}
	s.add(r)
	c := Call{Tool: r.Tool}
	switch {
	case r.Command != nil:
		c.Command = example
	case r.Path != "":
		c.Paths = []string{example}
	case r.Host != "":
		c.Host = example
	default:
		return true, ""
	}
	res := s.Decide(c)
	return res.Decision == r.Decision, res.Why
}

// CheckExamples runs the rule's examples; the first that fails is
// returned with its index in its list.
func (r *Rule) CheckExamples(match, notMatch []string) (int, error) {
	if r.Command == nil && r.Path == "" && r.Host == "" && len(match)+len(notMatch) > 0 {
		return 0, fmt.Errorf("a rule for a whole tool takes no examples")
	}
	for i, ex := range match {
		if ok, why := r.Matches(ex); !ok {
			return i, &ExampleError{Example: ex, Match: true, Rule: r, Why: why}
		}
	}
	for i, ex := range notMatch {
		if ok, _ := r.Matches(ex); ok {
			return i, &ExampleError{Example: ex, Rule: r}
		}
	}
	return 0, nil
}
