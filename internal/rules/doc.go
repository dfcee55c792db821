// Package rules matches tool calls against the user's [[rules]]: word-wise
// prefix rules for commands (command = ["npm", "run", "test:*"]), path
// rules for file tools (tool = "write_file", path = "docs/**"), host rules
// (host = "*.github.com") and plain tool rules, each deciding allow, ask
// or deny. The strictest decision of the rules that match wins.
//
// # Command lines
//
// A command rule lists words. A word matches the argv word equal to it; a
// word "*" matches any one word; a word ending in "*" ("test:*") matches
// any word starting with the rest. The rule matches an argv whose first
// words match its words (or exactly its words with exact = true). No other
// wildcard exists: "*" anywhere else in a word is refused when the rule is
// compiled, so "npm run test:*" never matches "npm run test-evil".
//
// allow is asymmetric with ask and deny, on purpose:
//
//   - A line is allowed by rules only if it is plain — simple commands of
//     literal words (quoted or not) joined by ;, &&, || or |, with no
//     assignment, expansion, substitution, glob, brace, tilde, escape,
//     subshell, function, control flow, background job or heredoc, and no
//     redirection but the harmless ones (to or from /dev/null, and
//     duplicating or closing a descriptor: 2>&1, >&-) — and every simple
//     command in it is allowed by a rule (or by the caller's Covered
//     predicate: a safe command the mode allows anyway). What the rule did
//     not see cannot ride along: "npm run test:unit > ~/.bashrc",
//     "npm run test:unit $(curl x)", "npm run test:unit; rm -rf src" and
//     "PATH=. npm run test:unit" are not allowed by an allow rule for
//     "npm run test:*".
//   - ask and deny rules match any command the line runs, as the shell
//     judge (internal/shellpolicy) resolves them at every depth: inside
//     sh -c and eval strings, substitutions, compound commands and the
//     wrappers it unwraps; and their words match anywhere in an argv, so a
//     wrapper the judge does not unwrap (xargs, find -exec, ionice) cannot
//     hide the command ("echo git push" is caught too: strict on the safe
//     side). A deny rule for "git push" catches "bash -c 'git push'" and
//     "echo $(git push)". Where the line runs code the judge cannot see
//     (eval "$x"), deny rules make it ask.
//
// # Threat model
//
// The rules come from the user (trusted) and, tightening only, from the
// workspace file; the command line and paths come from a model that may be
// adversarial and knows the rules. An allow rule must never cover more
// than the words it names: anything the parser cannot show as plain
// literal words is not allowed by rules, and falls back to the mode (a
// person is asked). Path rules match the path as named and where the
// change really lands (after symlinks); both must match.
//
// # Non-goals
//
// Rules do not replace the hard guards: the command blocklist, workspace
// confinement, masked and protected paths are checked before rules and
// nothing here can loosen them. A prefix rule allows whatever arguments
// follow its words: "git" allows every git command, and what a program
// does with an allowed argument (a Makefile target, a test) is not judged
// here; write narrow rules, or exact ones.
package rules
