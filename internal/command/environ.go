package command

// baseEnv are the variables every command may see.
var baseEnv = []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER"}

// localeEnv are the LC_* variables (the allowlist's LC_*).
var localeEnv = []string{
	"LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
	"LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
}

// GitHardening is given to every command as GIT_CONFIG_PARAMETERS (what
// `git -c` sets): it overrides the repository's configuration, so the git
// that warden runs — directly as a command, or inside a script, a make
// target or a post-edit hook — does not run programs that configuration
// names, even if an earlier command (which may change .git on the host when
// there is no jail) planted them:
//
//   - safe.bareRepository=explicit: a bare repository is used only when
//     named (--git-dir); otherwise files an agent wrote (HEAD, config,
//     objects/) make a directory a repository whose config runs code even
//     for read-only commands.
//   - core.fsmonitor=false: the program git status runs to list changes.
//   - core.hooksPath=/dev/null: no hooks run, neither .git/hooks nor a
//     hooks directory in the work tree (.husky/) that core.hooksPath names:
//     a commit warden makes skips the repository's pre-commit checks, the
//     price of not running what the agent could have written there.
//   - core.pager=cat: no pager program when a command has a terminal
//     (warden exec); GIT_PAGER and PAGER are not passed unless allowlisted.
//
// diff.external is not set: git (2.39, measured) takes an empty value as a
// program named "" and every git diff then fails ("external diff died"),
// and no other value switches it off. The files that could name one
// (.git/config, config.worktree, commondir) are protected from the file
// tools and read-only in the jail instead (workspace.GitControl).
//
// GIT_CONFIG_NOSYSTEM and GIT_CONFIG_GLOBAL are not set either: the user's
// own configuration lies outside the workspace, where neither the tools nor
// a jailed command can write, and it carries what commits and fetches need
// (user.name, credential helpers, LFS filters). In the jail HOME is the
// jail's own, so a command there sees no global configuration at all.
const GitHardening = "'safe.bareRepository'='explicit' 'core.fsmonitor'='false' 'core.hooksPath'='/dev/null' 'core.pager'='cat'"

// Environ builds a command's environment from the allowlist: PATH, HOME,
// LANG, LC_*, TERM, TMPDIR and USER, plus the names in allow
// (commands.env_allowlist; exact names, no patterns), each taken from
// lookup (os.LookupEnv) when set, and GitHardening. Nothing else is ever
// passed: API keys and tokens in warden's environment do not reach commands.
func Environ(allow []string, lookup func(string) (string, bool)) []string {
	seen := map[string]bool{}
	env := []string{}
	add := func(name string) {
		if name == "" || seen[name] || !validName(name) {
			return
		}
		seen[name] = true
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, n := range baseEnv {
		add(n)
	}
	for _, n := range localeEnv {
		add(n)
	}
	for _, n := range allow {
		if n != "GIT_CONFIG_PARAMETERS" {
			add(n)
		}
	}
	return append(env, "GIT_CONFIG_PARAMETERS="+GitHardening)
}

func validName(s string) bool {
	for i, r := range s {
		if r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9' {
			continue
		}
		return false
	}
	return s != ""
}
