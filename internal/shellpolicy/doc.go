// Package shellpolicy judges a shell command line before warden runs it.
//
// # One dialect
//
// warden runs every line with bash --noprofile --norc -c, on the host and
// in every jail, so Judge parses the line as bash (mvdan.cc/sh/v3/syntax)
// and walks every simple command in it: pipelines, lists, subshells,
// groups, command and process substitutions, heredocs, functions, loops,
// [[ ]], (( )), let, declarations, coproc, time and redirections. A wrapper
// that starts another shell is judged in that shell's dialect:
//
//   - sh -c, ash -c, busybox sh -c, toybox sh -c: as dash (POSIX) reads the
//     string and as bash reads it where sh is bash (Fedora, Arch, macOS);
//     both readings are judged and the worst wins. When they list the same
//     commands one list is kept, else each command says its dialect
//     (Simple.Dialect). Text dash reads but the parser refuses (&>): the
//     lines before it as dash reads them, the rest through the bash reading.
//   - dash -c, posh -c: POSIX; bash -c, rbash -c: bash; mksh -c, lksh -c:
//     the parser's mksh dialect.
//   - ksh/ksh93/oksh/pdksh -c (read as mksh and as bash), zsh -c (read as
//     the parser's experimental zsh and as bash, plus the code in zsh glob
//     qualifiers *(e:…:) and *(+…)), yash, fish, csh, tcsh, elvish, xonsh,
//     nu, pwsh and rc -c (read as bash): never Safe. What parses is judged,
//     so a blocklisted command in them is still blocked; what does not
//     parse is skipped, not refused, and the command is Dangerous.
//
// A CR LF in the line makes it Dangerous: the parser reads it as a line end
// where bash keeps the CR in the word. A differential test runs every
// corpus line under real bash, dash and zsh and checks that what bash and
// dash execute is what the judge listed for their reading.
//
// # Variables as the run will see them
//
// Variables are followed through the line in order (branches merged, loops
// run to a fixed point, subshells and pipeline stages discarded, a new
// shell starting from what the line exported). A name the line has not
// assigned is empty, unless bash sets it (RANDOM, PPID…: unknown) or it is
// in warden's environment allowlist (Options.EnvKnown, plus PATH, LANG,
// TERM, TMPDIR, USER, LOGNAME, SHELL, TZ, LC_*: unknown, possibly unset).
// HOME is the home directory (~) and PWD the workspace. With a nil
// EnvKnown every unassigned name is unknown. Each simple command is judged
// under every combination of the values its variables may hold (up to 16,
// then one variable at a time), each once with unknown text empty and once
// with it standing for any text: the blocklist fires when either reading
// shows the disaster (su$x is su; rm -rf /e$LANG could be /etc). A word
// with no known character at all does not fire a rule by itself (any
// command could be meant): it is Dangerous. Substitutions whose output is
// known (echo, printf of literals) are expanded: eval $(printf 'rm -rf /')
// is rm -rf /.
//
// # Evaluation contexts
//
// Every place bash evaluates text is judged like a substitution: (( )),
// $(( )), $[ ], let, array subscripts (in words, assignments and the
// names given to test -v, [ -v, [[ -v, unset, printf -v, read, getopts,
// wait -p, declare/typeset/local/readonly/export), the operands of [[ -eq
// -ne -lt -le -gt -ge ]], integer (-i) variables, namerefs (-n), ${!x},
// ${x@P}, PS0-PS4 (PS4 under set -x), PROMPT_COMMAND, trap handlers,
// mapfile -C and compgen -C callbacks. A variable used there has its
// value judged in turn (x='a[$(cmd)]'; echo $((x)) runs cmd). A value the
// judge cannot see in such a context makes the command Dangerous, unless it
// is only a number ($?, wc -l's output); one that may hold downloaded or
// decoded data is blocked (download-to-interpreter). A value the judge
// cannot see could hide a blocklisted command there: it is asked for, not
// blocked (only yolo runs it without a person).
//
// # Safe by allowlist
//
// A command is Safe only when a spec lists every word of it: the options
// it accepts (short, long, --opt=value, --opt value, clusters, -- ending
// options) and what its operands may be (workspace paths it reads or
// lists, patterns, numbers, text). Any other word makes it Dev (asked);
// options that write, run programs or change the system make it
// Dangerous. sed, awk, find, jq, git (its own options, -c, -C, --git-dir,
// pagers, --ext-diff, --output, REV:PATH), man, less, more and ps are Safe
// only in the listed forms (sed scripts are parsed: e, w, r and s///e are
// not safe; awk programs are lexed: system, pipes, getline < file and
// print > file are not). A safe command loses Safe (Dangerous) when it:
//
//   - names a path outside the workspace (absolute, ~, .., after a cd out,
//     git -C, the file of -f/--file/--exclude-from…, an input redirection);
//   - reads a name a mask hides (DefaultMask and Options.Mask, matched
//     case-insensitively) or a secret-looking name (id_rsa, .netrc,
//     credentials…), or uses a glob that could match a masked name;
//   - reads recursively (grep -r, rg, diff -r, find -exec) without
//     excluding every mask reachable below where it starts: exclusions must
//     hold in any case, so on the host only rg --iglob '!X' (or -g with
//     --glob-case-insensitive) and ".*" for the hidden masks count, and rg's
//     skipping of hidden names counts only with --no-ignore (an ignore file
//     the agent writes could whitelist them);
//   - reads a file descriptor opened outside the judged text (<&3);
//   - shows other processes' environments (ps e, ps aux e, ps eww).
//
// Under the jail (Options.Jailed) masked paths are covered by mounts, so
// exactly these are relaxed: a masked name, a glob that could match one,
// and a recursive reader's missing exclusions no longer cost Safe. Paths
// outside the workspace, secret-looking names, other processes'
// environments and git's history (git show :.env reads the object store,
// which no mount covers) are judged as on the host. The jail masks glob
// masks only where they matched when it started (see internal/sandbox).
//
// # Stdin sinks
//
// A stage that runs code it reads from its standard input, or from a file
// the line itself wrote with downloaded data, is a sink: shells without -c
// (or reading /dev/stdin), interpreters reading their program from stdin
// or running inline code that reads stdin and has a way to execute it
// (exec, eval, system…), sed e and s///e, awk system()/pipes of computed
// commands or -f /dev/stdin, script -c, make -f -, ed, ex, vim -es, gdb,
// parallel, at, batch, crontab -, dc, m4, sqlite3, psql, xargs running an
// interpreter, busybox/toybox applets, source /dev/stdin, and read loops
// that eval what they read. A download (curl, wget, nc, ssh, /dev/tcp,
// git archive --remote…) or a decoder (base64 -d, xxd -r, openssl -d, gpg
// -d, gzip -d and other decompressors, rev) feeding one, directly, through
// other stages, a process substitution, a variable or a file the line wrote
// (curl -o x; sh x, wget URL; sh NAME, tee) is blocked
// (download-to-interpreter). Known text fed to a shell is judged.
//
// # Rules as data
//
// The hard blocklist is a table of rules (ruleTable), each with commands,
// a check and examples it must and must not block; the safe commands are a
// table of specs with examples that must and must not be Safe; tests run
// every example. Rule ids are stable: they appear in refusals and audit
// records. User BlockedPatterns are added; nothing removes a built-in rule.
// Input that does not parse as bash, or is larger or deeper than
// MaxInputBytes, MaxDepth or MaxCommands, is blocked, never allowed.
//
// # Threat model and non-goals
//
// The line is written by a model that may be adversarial and knows these
// rules. Judge must not call Safe what it cannot see through, and must
// block the listed disasters in any spelling it can resolve statically. Not
// covered:
//   - what a program does with its own input: a script file, a Makefile, a
//     test, inline interpreter code beyond literal system() strings, git
//     configuration (diff.external, filters) in a repository config the
//     user or an approved command wrote. Such commands are Dev or Dangerous
//     and asked for; the jail confines them.
//   - what the repository tracks: git log -p, git show and git grep show a
//     masked file that was committed. Masks cover the working tree.
//   - the host filesystem: Judge is a pure function of the text; it never
//     reads files, resolves globs or looks up users.
//   - hiding a command from the blocklist behind text the judge cannot see
//     (a variable read at run time, a program's output turned into code by
//     a transform other than a decoder): such lines are Dangerous, so only
//     yolo runs them without a person.
package shellpolicy
