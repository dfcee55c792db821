package shellpolicy

import (
	"path"
	"sort"
	"strconv"
	"strings"
)

// systemDirs are the top-level directories of a system (Linux and macOS).
var systemDirs = map[string]bool{
	"bin": true, "boot": true, "dev": true, "etc": true, "home": true, "lib": true, "lib32": true,
	"lib64": true, "libx32": true, "media": true, "mnt": true, "opt": true, "proc": true, "root": true,
	"run": true, "sbin": true, "srv": true, "sys": true, "tmp": true, "usr": true, "var": true,
	"snap": true, "nix": true, "lost+found": true, "Applications": true, "Library": true,
	"System": true, "Users": true, "Volumes": true, "private": true, "cores": true,
}

// systemDirList is systemDirs in a stable order, for stable reasons.
var systemDirList = func() []string {
	l := make([]string, 0, len(systemDirs))
	for d := range systemDirs {
		l = append(l, d)
	}
	sort.Strings(l)
	return l
}()

// rules applies the hard blocklist to one argv (base is argv[0]'s base name).
func (j *judge) rules(base string, argv []arg, r *res) {
	p := j.pos(argv[0].pos)
	args := argv[1:]
	switch {
	case base == "rm":
		j.rmRule(args, r)
	case base == "find":
		j.findDeleteRule(args, r)
	case base == "chmod":
		chmodRule(args, r, j)
	case base == "mkdir" || base == "install":
		for k, a := range args {
			if (a.val == "-m" || a.val == "--mode") && k+1 < len(args) {
				if worldWritable(args[k+1].val) {
					r.block(RuleChmodWorldWritable, j.pos(args[k+1].pos), "%s creates with world-writable mode %s", base, args[k+1].val)
				}
			} else if m, ok := strings.CutPrefix(a.val, "--mode="); ok && worldWritable(m) {
				r.block(RuleChmodWorldWritable, j.pos(a.pos), "%s creates with world-writable mode %s", base, m)
			} else if m, ok := strings.CutPrefix(a.val, "-m"); ok && m != "" && worldWritable(m) {
				r.block(RuleChmodWorldWritable, j.pos(a.pos), "%s creates with world-writable mode %s", base, m)
			}
		}
	case base == "chown" || base == "chgrp":
		j.chownRule(base, args, r)
	case base == "dd":
		for _, a := range args {
			if t, ok := strings.CutPrefix(a.val, "of="); ok && !a.computed {
				if dev, harmless := deviceTarget(t); dev && !harmless {
					r.block(RuleDDToDevice, j.pos(a.pos), "dd writes to device %s", t)
				}
			}
		}
	case base == "tee" || base == "cp" || base == "mv" || base == "shred" || base == "install" || base == "truncate" || base == "ln":
		for _, a := range args {
			if a.computed || strings.HasPrefix(a.val, "-") {
				continue
			}
			if dev, harmless := deviceTarget(a.val); dev && !harmless && (base != "cp" && base != "mv" || a.pos == args[len(args)-1].pos) {
				r.block(RuleRedirectToDevice, j.pos(a.pos), "%s writes to device %s", base, a.val)
			}
		}
	case strings.HasPrefix(base, "mkfs") || strings.HasPrefix(base, "mke2fs") || base == "mkswap" ||
		base == "fdisk" || base == "sfdisk" || base == "cfdisk" || base == "gdisk" || base == "sgdisk" ||
		base == "parted" || base == "wipefs" || base == "blkdiscard" || base == "mkdosfs" || base == "newfs":
		r.block(RuleMkfs, p, "%s formats or repartitions disks", base)
	case base == "kill":
		killRule(args, r, p)
	case base == "pkill":
		if sigKill(args) && hasShortOrLong(args, 'f', "full") {
			r.block(RuleMassKill, p, "pkill -9 -f kills every process whose command line matches")
		}
	case base == "killall":
		if sigKill(args) {
			r.block(RuleMassKill, p, "killall -9 kills every process with that name")
		}
	case base == "killall5":
		r.block(RuleMassKill, p, "killall5 signals every process")
	case base == "shutdown" || base == "reboot" || base == "halt" || base == "poweroff":
		r.block(RulePower, p, "%s stops or restarts the machine", base)
	case base == "init" || base == "telinit":
		for _, a := range args {
			switch a.val {
			case "0", "6", "1", "s", "S", "q", "Q", "u", "U":
				r.block(RulePower, p, "%s %s changes the runlevel", base, a.val)
			}
		}
	case base == "systemctl" || base == "loginctl":
		for _, a := range args {
			switch a.val {
			case "poweroff", "reboot", "halt", "kexec", "soft-reboot", "emergency", "rescue", "suspend", "hibernate", "hybrid-sleep", "suspend-then-hibernate", "default", "isolate":
				r.block(RulePower, p, "%s %s stops or restarts the machine", base, a.val)
			}
		}
	}
}

// rmFlags parses rm's options (GNU: options may follow operands).
func rmFlags(args []arg) (recursive bool, operands []arg) {
	longs := []string{"recursive", "force", "no-preserve-root", "interactive", "one-file-system", "preserve-root", "dir", "verbose", "help", "version"}
	end := false
	for _, a := range args {
		v := a.val
		switch {
		case a.computed || end || v == "-" || !strings.HasPrefix(v, "-"):
			operands = append(operands, a)
		case v == "--":
			end = true
		case strings.HasPrefix(v, "--"):
			name, _, _ := strings.Cut(v[2:], "=")
			var match []string
			for _, l := range longs {
				if l == name {
					match = []string{l}
					break
				}
				if strings.HasPrefix(l, name) {
					match = append(match, l)
				}
			}
			if len(match) == 1 && match[0] == "recursive" {
				recursive = true
			}
		default:
			if strings.ContainsAny(v[1:], "rR") {
				recursive = true
			}
		}
	}
	return recursive, operands
}

func (j *judge) rmRule(args []arg, r *res) {
	recursive, operands := rmFlags(args)
	if !recursive {
		return
	}
	for _, a := range operands {
		if why := j.rootTarget(a); why != "" {
			r.block(RuleRmRecursiveRoot, j.pos(a.pos), "rm -r on %s (%s)", a.val, why)
			return
		}
	}
}

func (j *judge) findDeleteRule(args []arg, r *res) {
	del, filtered := false, false
	for _, a := range args {
		switch a.val {
		case "-delete":
			del = true
		case "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
			"-lname", "-ilname", "-inum", "-samefile", "-newer", "-anewer", "-cnewer", "-mtime", "-mmin",
			"-atime", "-amin", "-ctime", "-cmin", "-size", "-user", "-group", "-uid", "-gid", "-empty",
			"-perm", "-links", "-nouser", "-nogroup", "-used", "-fstype", "-context":
			filtered = true
		}
		if strings.HasPrefix(a.val, "-newer") {
			filtered = true
		}
	}
	if !del || filtered {
		return
	}
	for _, a := range args {
		if strings.HasPrefix(a.val, "-") || a.val == "(" || a.val == "!" {
			break
		}
		if why := j.rootTarget(a); why != "" {
			r.block(RuleRmRecursiveRoot, j.pos(a.pos), "find -delete on %s (%s)", a.val, why)
			return
		}
	}
}

// rootTarget says why deleting a tree at a would be a disaster ("" if not):
// /, /*, a top-level system directory, the home directory, the workspace
// itself or a parent of it.
func (j *judge) rootTarget(a arg) string {
	v := a.val
	if a.computed {
		raw := strings.NewReplacer(`"`, "", `'`, "").Replace(v)
		switch {
		case strings.HasPrefix(raw, "$HOME") || strings.HasPrefix(raw, "${HOME"):
			return "the home directory"
		case strings.HasPrefix(raw, "~"):
			return "the home directory"
		}
		// $X/… with X unknown: an empty X makes it /….
		if strings.HasPrefix(raw, "$") {
			rest := strings.TrimLeft(raw[1:], "{}")
			k := strings.IndexAny(rest, "/")
			if k >= 0 {
				tail := strings.Trim(rest[k:], `"'`)
				if why := absTarget(tail); why != "" {
					return "an unset variable makes it " + why
				}
			}
		}
		return ""
	}
	if strings.HasPrefix(v, "~") {
		rest := ""
		if k := strings.IndexByte(v, '/'); k >= 0 {
			rest = v[k:]
		}
		c := path.Clean("/" + rest)
		if c == "/" || strings.Count(c, "/") == 1 && isGlob(c[1:]) {
			return "the home directory"
		}
		return ""
	}
	if !strings.HasPrefix(v, "/") && j.cwd != "" {
		if j.cwd == "?" {
			if c := path.Clean(v); c == "." || c == "*" || strings.HasPrefix(c, "..") {
				return "after a cd to an unknown directory"
			}
			return ""
		}
		if strings.HasPrefix(j.cwd, "~") {
			return j.rootTarget(arg{val: path.Join(j.cwd, v)})
		}
		v = path.Join(j.cwd, v)
	}
	if strings.HasPrefix(v, "/") {
		return absTarget(v)
	}
	c := path.Clean(v)
	if c == "." {
		return "the whole workspace"
	}
	if c == ".." || strings.Trim(strings.ReplaceAll(c, "..", ""), "/") == "" {
		return "a parent of the workspace"
	}
	return ""
}

// absTarget judges an absolute path for rm -r / find -delete.
func absTarget(v string) string {
	c := path.Clean(v)
	if c == "/" {
		return "the root directory"
	}
	comps := strings.Split(c[1:], "/")
	first := comps[0]
	if len(comps) == 1 {
		if systemDirs[first] {
			return "a system directory"
		}
		if isGlob(first) {
			for _, d := range systemDirList {
				if ok, _ := path.Match(first, d); ok {
					return "a pattern matching system directory /" + d
				}
			}
			if first == "*" || first == ".*" {
				return "everything under /"
			}
		}
		return ""
	}
	if len(comps) == 2 && isGlob(comps[1]) && first != "tmp" {
		if systemDirs[first] {
			return "everything in a system directory"
		}
		if isGlob(first) {
			return "a pattern over system directories"
		}
	}
	if isGlob(first) && len(comps) <= 2 {
		for _, d := range systemDirList {
			if ok, _ := path.Match(first, d); ok && d != "tmp" {
				return "a pattern matching system directory /" + d
			}
		}
	}
	return ""
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// deviceTarget reports whether t is under /dev, and whether writing there
// is harmless (null, zero, the standard streams, terminals).
func deviceTarget(t string) (dev, harmless bool) {
	c := path.Clean(t)
	if !strings.HasPrefix(c, "/dev/") {
		return false, false
	}
	switch c {
	case "/dev/null", "/dev/zero", "/dev/full", "/dev/stdout", "/dev/stderr", "/dev/stdin",
		"/dev/tty", "/dev/random", "/dev/urandom":
		return true, true
	}
	if strings.HasPrefix(c, "/dev/fd/") || strings.HasPrefix(c, "/dev/pts/") {
		return true, true
	}
	if strings.HasPrefix(c, "/dev/shm/") || strings.HasPrefix(c, "/dev/mqueue/") {
		return false, false // files on a tmpfs
	}
	if isNetDev(c) {
		return false, false // bash's network pseudo-files: a file write, dangerous
	}
	return true, false
}

// isNetDev reports bash's /dev/tcp and /dev/udp pseudo-files.
func isNetDev(t string) bool {
	c := path.Clean(t)
	return strings.HasPrefix(c, "/dev/tcp/") || strings.HasPrefix(c, "/dev/udp/")
}

// worldWritable reports whether a chmod mode gives write permission to others.
func worldWritable(mode string) bool {
	if mode == "" {
		return false
	}
	if strings.Trim(mode, "01234567") == "" {
		n, err := strconv.ParseUint(mode, 8, 32)
		return err == nil && n&0o002 != 0
	}
	for _, clause := range strings.Split(mode, ",") {
		who := strings.TrimLeft(clause, "ugoa")
		whoSet := clause[:len(clause)-len(who)]
		if !strings.ContainsAny(whoSet, "oa") {
			continue
		}
		// ops: ([+-=][perms]*)+
		op := byte(0)
		for k := 0; k < len(who); k++ {
			c := who[k]
			switch c {
			case '+', '-', '=':
				op = c
			case 'w', 'u', 'g', 'o':
				// o=u, a+g… copy permissions that may include w
				if op == '+' || op == '=' {
					return true
				}
			}
		}
	}
	return false
}

func chmodRule(args []arg, r *res, j *judge) {
	var operands []arg
	end := false
	for _, a := range args {
		v := a.val
		switch {
		case a.computed || end:
			operands = append(operands, a)
		case v == "--":
			end = true
		case strings.HasPrefix(v, "--"):
			if strings.HasPrefix(v, "--reference") {
				operands = append(operands, arg{val: "--reference"})
			}
		case len(v) > 1 && v[0] == '-' && strings.Trim(v[1:], "cfvR") == "":
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) == 0 || operands[0].computed {
		return
	}
	if worldWritable(operands[0].val) {
		r.block(RuleChmodWorldWritable, j.pos(operands[0].pos), "chmod %s makes files writable by every user", operands[0].val)
	}
}

func (j *judge) chownRule(base string, args []arg, r *res) {
	recursive := false
	var operands []arg
	end := false
	for _, a := range args {
		v := a.val
		switch {
		case a.computed || end || !strings.HasPrefix(v, "-") || v == "-":
			operands = append(operands, a)
		case v == "--":
			end = true
		case v == "--recursive":
			recursive = true
		case strings.HasPrefix(v, "--"):
			if strings.HasPrefix(v, "--reference") {
				operands = append([]arg{{val: "--reference"}}, operands...)
			}
		default:
			if strings.ContainsRune(v[1:], 'R') {
				recursive = true
			}
		}
	}
	if !recursive || len(operands) < 2 {
		return
	}
	for _, a := range operands[1:] {
		if why := j.systemTarget(a); why != "" {
			r.block(RuleChownRecursiveSystem, j.pos(a.pos), "%s -R on %s (%s)", base, a.val, why)
			return
		}
	}
}

// systemTarget: /, a system directory or one level below it, or the home directory.
func (j *judge) systemTarget(a arg) string {
	if why := j.rootTarget(a); why != "" {
		return why
	}
	if a.computed || !strings.HasPrefix(a.val, "/") {
		return ""
	}
	c := path.Clean(a.val)
	comps := strings.Split(c[1:], "/")
	switch comps[0] {
	case "home", "opt", "srv", "mnt", "media", "tmp", "Users", "Volumes":
		return ""
	}
	if systemDirs[comps[0]] && len(comps) <= 2 {
		return "a system directory"
	}
	return ""
}

func isKillSig(s string) bool {
	s = strings.ToUpper(strings.TrimPrefix(s, "-"))
	return s == "9" || s == "KILL" || s == "SIGKILL"
}

// sigKill reports a SIGKILL signal option in any spelling.
func sigKill(args []arg) bool {
	for k, a := range args {
		v := a.val
		switch {
		case isKillSig(v) && strings.HasPrefix(v, "-"):
			return true
		case (v == "-s" || v == "--signal" || v == "-n") && k+1 < len(args) && isKillSig(args[k+1].val):
			return true
		case strings.HasPrefix(v, "--signal=") && isKillSig(strings.TrimPrefix(v, "--signal=")):
			return true
		case strings.HasPrefix(v, "-s") && len(v) > 2 && isKillSig(v[2:]):
			return true
		}
	}
	return false
}

func hasShortOrLong(args []arg, short byte, long string) bool {
	for _, a := range args {
		v := a.val
		if v == "--"+long {
			return true
		}
		if len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.Trim(v[1:], "0123456789") != "" && strings.IndexByte(v[1:], short) >= 0 && !isKillSig(v) {
			return true
		}
	}
	return false
}

// killRule blocks kill with pid -1 (every process).
func killRule(args []arg, r *res, p Position) {
	seenSig := false
	end := false
	for k := 0; k < len(args); k++ {
		v := args[k].val
		switch {
		case end:
			if v == "-1" {
				r.block(RuleMassKill, p, "kill -1 signals every process")
				return
			}
		case v == "--":
			end = true
		case v == "-s" || v == "-n" || v == "--signal":
			k++
			seenSig = true
		case v == "-l" || v == "-L" || v == "--list" || v == "--table":
			return
		case strings.HasPrefix(v, "-") && !seenSig:
			seenSig = true
		case v == "-1":
			r.block(RuleMassKill, p, "kill -1 signals every process")
			return
		}
	}
}
