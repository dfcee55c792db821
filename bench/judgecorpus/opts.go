package main

import (
	"strings"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/shellpolicy"
)

// judgeOptions are the options warden's engine passes: the runner's
// environment allowlist, and the jail when there is one.
func judgeOptions(jailed bool) *shellpolicy.Options {
	var names []string
	for _, kv := range command.Environ(nil, func(string) (string, bool) { return "x", true }) {
		names = append(names, kv[:strings.IndexByte(kv, '=')])
	}
	return &shellpolicy.Options{EnvKnown: names, Jailed: jailed}
}
