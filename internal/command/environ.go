package command

// baseEnv are the variables every command may see.
var baseEnv = []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER"}

// localeEnv are the LC_* variables (the allowlist's LC_*).
var localeEnv = []string{
	"LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY", "LC_MESSAGES",
	"LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT", "LC_IDENTIFICATION",
}

// GitHardening is given to every command as GIT_CONFIG_PARAMETERS (what
// `git -c` sets), overriding repository config. A bare repository is only
// used when named explicitly: otherwise files an agent wrote (HEAD, config,
// objects/) make a directory a repository whose config runs code even for
// read-only commands (diff.external under git diff, gpg.program under git
// log --show-signature). core.fsmonitor names a program git status runs.
const GitHardening = "'safe.bareRepository'='explicit' 'core.fsmonitor'='false'"

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
