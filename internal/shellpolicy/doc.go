// Package shellpolicy judges a shell command line before warden runs it.
//
// Judge parses the line as bash with mvdan.cc/sh/v3/syntax and walks every
// simple command in it: pipelines, && || ; lists, subshells, { } groups,
// command and process substitutions, heredocs (and substitutions in their
// bodies), functions, if/for/while/case, [[ ]], (( )), let, declare/export
// values, coproc, time and redirections. Argument words are resolved with
// mvdan.cc/sh/v3/expand: quotes and escapes are removed, brace expansion is
// done (when small), and a variable is known only when the line itself
// assigns it a literal (each value is judged) or it is a parameter of a
// function or sh -c string called with literal arguments. Everything else
// (other variables, substitutions, globs in a command name) is computed. A
// computed command name is dangerous.
//
// Wrappers are unwrapped and the command they run is judged: sh/bash/dash/
// zsh/ksh -c STRING (parsed again), a shell fed a heredoc or an echo, eval,
// trap, alias values, env (assignments, -i, -u, -C, -S), nice, nohup,
// timeout, time, stdbuf, ionice, setsid, chrt, taskset, unbuffer, flock,
// watch, strace, chroot, unshare, nsenter, xargs, find -exec/-execdir/-ok,
// command, builtin, exec and busybox APPLET. Literal strings passed to
// system()-like calls in inline awk/python/perl/ruby/node/php code are
// judged too (best effort).
//
// The hard blocklist (see the Rule* constants) applies to the resolved
// argv in every mode and cannot be removed by configuration; the user's
// BlockedPatterns are added to it. Classification (Safe < Dev < Dangerous)
// matches word sequences, never string prefixes; the line's class is its
// worst command's. Input that does not parse, or is larger or deeper than
// MaxInputBytes, MaxDepth or MaxCommands, is blocked: never allowed.
//
// Threat model: the line is written by a model that may be adversarial and
// knows these rules. Judge must not allow (class Safe) what it cannot see
// through, and must block the listed disasters in any spelling it can
// resolve statically. Not covered (non-goals):
//   - what a program does with its own input: a script file, a Makefile, a
//     test, inline interpreter code beyond literal system() strings, git
//     configuration in a repository the agent can write. Such commands are
//     Dev or Dangerous and are asked for; the sandbox confines them.
//   - code stored in data and evaluated later by bash itself (arithmetic
//     evaluation of a variable holding a[$(cmd)], read into a variable then
//     eval): assignments whose literal value holds $( or ` are Dangerous,
//     eval of a computed string is Dangerous, but nothing is blocked.
//   - the host filesystem: Judge is a pure function of the text; it never
//     reads files, resolves globs or looks up users. Safe commands that name
//     paths outside the workspace or secret-looking files lose Safe, but
//     on the host a Dangerous command that is approved can read anything.
//   - zsh/fish/csh specific syntax: strings for those shells are parsed as
//     bash; what does not parse is blocked.
package shellpolicy
