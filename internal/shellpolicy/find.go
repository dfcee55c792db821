package shellpolicy

import (
	"strings"
)

// findCmd is a find command line read as find reads it.
type findCmd struct {
	starts   []arg
	follow   bool // -L or -follow: symbolic links are followed
	filtered bool // a test restricts what the actions apply to
	deletes  bool
	writes   []string // -fprint FILE …
	execs    []findExec
	unknown  []string
}

type findExec struct {
	action string // -exec, -execdir, -ok, -okdir
	argv   []arg
}

var findNoArg = map[string]bool{
	"-empty": false, "-readable": true, "-writable": true, "-executable": true, "-nouser": true, "-nogroup": true,
	"-true": false, "-false": true, "-depth": false, "-d": false, "-prune": false, "-quit": false, "-print": false, "-print0": false,
	"-ls": false, "-mount": false, "-xdev": false, "-noleaf": false, "-daystart": false, "-ignore_readdir_race": false,
	"-noignore_readdir_race": false, "-nowarn": false, "-warn": false,
}

// findOneArg are primaries taking one argument; true when they filter.
var findOneArg = map[string]bool{
	"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true, "-regex": true,
	"-iregex": true, "-lname": true, "-ilname": true, "-type": true, "-xtype": true, "-maxdepth": false, "-mindepth": true,
	"-size": true, "-mtime": true, "-mmin": true, "-atime": true, "-amin": true, "-ctime": true, "-cmin": true, "-used": true,
	"-newer": true, "-anewer": true, "-cnewer": true, "-perm": true, "-user": true, "-group": true, "-uid": true, "-gid": true,
	"-links": true, "-inum": true, "-samefile": true, "-printf": false, "-context": true, "-fstype": true, "-regextype": false,
}

func parseFind(args []arg) *findCmd {
	f := &findCmd{}
	k := 0
	for ; k < len(args); k++ {
		v := args[k].val
		switch {
		case v == "-L":
			f.follow = true
		case v == "-H" || v == "-P" || strings.HasPrefix(v, "-O"):
		case v == "-D":
			k++
		default:
			goto starts
		}
	}
starts:
	for ; k < len(args); k++ {
		v := args[k].val
		if strings.HasPrefix(v, "-") && !args[k].hasHole() || v == "(" || v == "!" || v == "," {
			break
		}
		f.starts = append(f.starts, args[k])
	}
	for ; k < len(args); k++ {
		a := args[k]
		v := a.val
		if a.hasHole() {
			f.unknown = append(f.unknown, v)
			f.filtered = true
			continue
		}
		switch {
		case v == "(" || v == ")" || v == "!" || v == "," || v == "-not" || v == "-a" || v == "-and" || v == "-o" || v == "-or":
		case v == "-follow":
			f.follow = true
		case v == "-delete":
			f.deletes = true
		case v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir":
			e := k + 1
			for e < len(args) && args[e].val != ";" && !(args[e].val == "+" && e > k+1 && strings.Contains(args[e-1].val, "{}")) {
				e++
			}
			f.execs = append(f.execs, findExec{action: v, argv: args[k+1 : min(e, len(args))]})
			k = e
		case v == "-fprint" || v == "-fprint0" || v == "-fls":
			if k+1 < len(args) {
				f.writes = append(f.writes, args[k+1].val)
			}
			k++
		case v == "-fprintf":
			if k+1 < len(args) {
				f.writes = append(f.writes, args[k+1].val)
			}
			k += 2
		case strings.HasPrefix(v, "-newer") && len(v) == 8:
			f.filtered = true
			k++
		default:
			if filt, ok := findNoArg[v]; ok {
				f.filtered = f.filtered || filt
				continue
			}
			if filt, ok := findOneArg[v]; ok {
				f.filtered = f.filtered || filt
				k++
				continue
			}
			f.unknown = append(f.unknown, v)
		}
	}
	if len(f.starts) == 0 {
		f.starts = []arg{{val: "."}}
	}
	return f
}

// checkFind classifies find: its starting points are listed; -delete,
// -fprint and -exec make it more than a lister.
func checkFind(j *judge, p *parsed, r *res) {
	f := parseFind(p.argv[1:])
	for _, s := range f.starts {
		j.checkKind("find", kList, nil, s, r)
	}
	for _, u := range f.unknown {
		r.worse(Dev, "find: "+shown(u)+" is not a test or action warden knows to be safe")
	}
	if f.follow {
		r.worse(Dangerous, "find -L follows symbolic links, out of the workspace too")
	}
	if f.deletes {
		r.worse(Dangerous, "find -delete deletes what it finds")
	}
	for _, w := range f.writes {
		r.worse(Dangerous, "find writes its output to file "+w)
	}
	for _, e := range f.execs {
		if len(e.argv) == 0 {
			continue
		}
		inner := j.judgeArgv(e.argv, &callCtx{})
		r.merge(inner)
		r.worse(inner.class, "find "+e.action+" runs: "+inner.why)
		if !j.opts.Jailed {
			r.worse(Dangerous, "find "+e.action+" runs a command on every file it finds, masked ones too")
		}
	}
}
