package landlock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Modes accepted by [Restrict] (the [sandbox] landlock key).
const (
	ModeAuto = "auto" // restrict when the kernel has Landlock, else carry on
	ModeOn   = "on"   // restrict, or fail when the kernel has no Landlock
	ModeOff  = "off"  // do nothing
)

// ErrUnavailable is wrapped by the error [Restrict] returns in mode "on" on
// a kernel without Landlock.
var ErrUnavailable = errors.New("landlock is not available")

// testOnlyABI, when set (only from TestMain), replaces the kernel's answer
// in [ABI].
var testOnlyABI func() int

// scopeSignal is Landlock's signal scope (LANDLOCK_SCOPE_SIGNAL), the
// second bit of go-landlock's ScopedSet.
const scopeSignal ll.ScopedSet = 1 << 1

// configs are go-landlock's presets by ABI version (index 1 = V1).
var configs = []ll.Config{{}, ll.V1, ll.V2, ll.V3, ll.V4, ll.V5, ll.V6, ll.V7, ll.V8, ll.V9, ll.V10, ll.V11}

// ABI returns the Landlock ABI version the running kernel offers: 0 when it
// has none (not built in, or not in the boot-time LSM list).
func ABI() int {
	if testOnlyABI != nil {
		return testOnlyABI()
	}
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// Status says what [Restrict] applied.
type Status struct {
	Mode     string // the mode asked for
	ABI      int    // kernel ABI version, 0 when Landlock is absent
	Used     int    // ABI version of the ruleset applied (at most what go-landlock knows)
	Enforced bool   // a ruleset now confines this process and its children
	Scoped   bool   // abstract UNIX sockets are scoped too (ABI 6+)
	Reason   string // why nothing was enforced, when Enforced is false
}

// String is the form warden status shows: "enforced (ABI n)", "off", or
// "unavailable: why".
func (s Status) String() string {
	switch {
	case s.Enforced:
		return fmt.Sprintf("enforced (ABI %d)", s.Used)
	case s.Mode == ModeOff:
		return "off"
	}
	return "unavailable: " + s.Reason
}

// SystemReadOnly lists the system paths every restricted process may read
// and execute: the program and library directories, the few /etc files a
// toolchain reads (the loader cache, users and groups, name resolution, time
// zone, certificates, Debian's alternatives), /proc, CPU topology, and the
// random devices. The rest of /etc is not in it. Missing entries are skipped.
func SystemReadOnly() []string {
	return []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
		"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/host.conf",
		"/etc/hosts", "/etc/resolv.conf", "/etc/gai.conf", "/etc/protocols", "/etc/services",
		"/etc/localtime", "/etc/timezone", "/etc/mime.types",
		"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives",
		"/proc", "/sys/devices/system/cpu",
		"/dev/urandom", "/dev/random",
	}
}

// SystemReadWrite lists the device files every restricted process may open
// for writing (and use ioctl on): /dev/null and friends, and /dev/tty.
func SystemReadWrite() []string {
	return []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
}

// Restrict confines this process (every thread) and all its future children
// to reading and writing under rw, reading and executing under ro and
// [SystemReadOnly], and writing the devices in [SystemReadWrite]. Everything
// else on the filesystem is refused with EACCES (EXDEV for links and renames
// across hierarchies). On ABI 6 and later it also scopes abstract UNIX
// sockets (not signals: see Restrict's body) to the processes it confines.
// It cannot be undone.
//
// Paths must be absolute and must exist; a file gets file rights, a
// directory rights over its whole tree. rw is exactly what is writable: a
// caller that wants HOME or /tmp writable passes them. Mode "" means auto.
//
// In mode "auto" a kernel without Landlock yields a Status that is not
// enforced and a nil error; in mode "on" it is an error wrapping
// [ErrUnavailable]; in mode "off" nothing is checked or applied. Any other
// failure is an error in every mode: the ruleset is applied whole, at the
// kernel's own ABI level, or not at all.
func Restrict(mode string, rw, ro []string) (Status, error) {
	if mode == "" {
		mode = ModeAuto
	}
	st := Status{Mode: mode}
	switch mode {
	case ModeOff:
		st.Reason = "landlock = off"
		return st, nil
	case ModeAuto, ModeOn:
	default:
		return st, fmt.Errorf("landlock: unknown mode %q (want auto, on or off)", mode)
	}
	rules, err := buildRules(rw, ro)
	if err != nil {
		return st, err
	}
	st.ABI = ABI()
	if st.ABI < 1 {
		st.Reason = "the kernel has no Landlock (needs Linux 5.13+ with landlock in the lsm= boot list)"
		if mode == ModeOn {
			return st, fmt.Errorf("landlock = on: %w: %s", ErrUnavailable, st.Reason)
		}
		return st, nil
	}
	st.Used = min(st.ABI, len(configs)-1)
	cfg := configs[st.Used]
	cfg.HandledAccessNet = 0 // the network namespace isolates the network
	// Signals are not scoped: Landlock confines each thread of a Go process
	// separately, so a signal scope would stop the worker from killing a
	// command that another of its threads started (a timed-out command then
	// ran on until the worker was reset). The jail's own pid namespace
	// already keeps its processes from signalling anything outside it.
	cfg.Scoped &^= scopeSignal
	if st.Used >= 2 {
		// Renaming and linking across directories (refer) exists from ABI 2;
		// without it the kernel refuses such moves everywhere, which is safe.
		rules[0] = rules[0].(ll.FSRule).WithRefer()
	}
	if err := cfg.Restrict(rules...); err != nil {
		st.Reason = err.Error()
		return st, fmt.Errorf("landlock: failed to restrict (ABI %d): %w", st.Used, err)
	}
	st.Enforced = true
	st.Scoped = cfg.Scoped != 0
	st.Reason = ""
	return st, nil
}

// buildRules checks the paths and turns them into rules. rules[0] is
// always the read-write directory rule.
func buildRules(rw, ro []string) ([]ll.Rule, error) {
	rwDirs, rwFiles, err := split(rw, false)
	if err != nil {
		return nil, fmt.Errorf("landlock: read-write path: %w", err)
	}
	roDirs, roFiles, err := split(ro, false)
	if err != nil {
		return nil, fmt.Errorf("landlock: read-only path: %w", err)
	}
	sysDirs, sysFiles, err := split(SystemReadOnly(), true)
	if err != nil {
		return nil, fmt.Errorf("landlock: system path: %w", err)
	}
	_, devFiles, err := split(SystemReadWrite(), true)
	if err != nil {
		return nil, fmt.Errorf("landlock: device: %w", err)
	}
	return []ll.Rule{
		ll.RWDirs(rwDirs...),
		ll.RWFiles(rwFiles...),
		ll.RODirs(append(roDirs, sysDirs...)...),
		ll.ROFiles(append(roFiles, sysFiles...)...),
		ll.RWFiles(devFiles...).WithIoctlDev(),
	}, nil
}

// split sorts paths into directories and other files, following symbolic
// links as the kernel will. A missing path is an error unless optional.
func split(paths []string, optional bool) (dirs, files []string, err error) {
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, nil, fmt.Errorf("%q is not absolute", p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			if optional && errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, nil, err
		}
		if fi.IsDir() {
			dirs = append(dirs, filepath.Clean(p))
		} else {
			files = append(files, filepath.Clean(p))
		}
	}
	return dirs, files, nil
}
