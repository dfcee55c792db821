package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wardenhq/warden/internal/sandbox/seccomp"
)

// dockerSeccomp is Docker's seccomp profile format (the subset warden
// writes): a default action, the native architecture, and one entry per row
// of warden's rule table.
type dockerSeccomp struct {
	DefaultAction string               `json:"defaultAction"`
	Architectures []string             `json:"architectures"`
	Syscalls      []dockerSeccompEntry `json:"syscalls"`
}

type dockerSeccompEntry struct {
	Names    []string           `json:"names"`
	Action   string             `json:"action"`
	ErrnoRet *uint              `json:"errnoRet,omitempty"`
	Args     []dockerSeccompArg `json:"args,omitempty"`
	Comment  string             `json:"comment,omitempty"`
}

type dockerSeccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

// dockerArch is the SCMP_ARCH_* name of the architecture warden runs on.
// Only it is listed in the profile: libseccomp then kills a system call made
// under any other ABI (i386 through int 0x80, x32), as warden's own filter
// does.
func dockerArch() (string, error) {
	switch runtime.GOARCH {
	case "amd64":
		return "SCMP_ARCH_X86_64", nil
	case "arm64":
		return "SCMP_ARCH_AARCH64", nil
	}
	return "", seccomp.ErrUnsupportedArch
}

// seccompProfile converts warden's seccomp rule table
// (internal/sandbox/seccomp) into a Docker seccomp profile: the same rows,
// the same errno for each, everything else allowed. Under lockdown it adds
// the rows seccomp.Options.DenyNetwork adds (no AF_INET/AF_INET6 sockets).
//
// Conditions become libseccomp comparisons. libseccomp compares all 64 bits
// of an argument where warden's filter compares the low 32 (the kernel
// truncates every argument the table inspects), so an equality is written
// as SCMP_CMP_MASKED_EQ with the 32-bit mask: a value with junk in its high
// word still matches. An inequality on 64 bits holds whenever it holds on
// the low 32, so it denies at least what warden's filter denies. A
// condition "any of these bits" (clone's CLONE_NEW* flags) becomes one
// entry per bit.
func seccompProfile(lockdown bool) ([]byte, error) {
	arch, err := dockerArch()
	if err != nil {
		return nil, err
	}
	rules := seccomp.Rules()
	if rules == nil {
		return nil, seccomp.ErrUnsupportedArch
	}
	if lockdown {
		for _, af := range []uint32{unix.AF_INET, unix.AF_INET6} {
			rules = append(rules, seccomp.Rule{
				Syscall: "socket", Nr: unix.SYS_SOCKET, Action: seccomp.Errno(syscall.EPERM),
				Args: []seccomp.ArgMatch{{Index: 0, Op: seccomp.ArgEqual, Mask: 0xffffffff, Value: af}},
				Why:  "lockdown: no IP sockets",
			})
		}
	}
	p := dockerSeccomp{DefaultAction: "SCMP_ACT_ALLOW", Architectures: []string{arch}}
	for _, r := range rules {
		entries, err := dockerEntries(r)
		if err != nil {
			return nil, fmt.Errorf("seccomp rule %s: %w", r, err)
		}
		p.Syscalls = append(p.Syscalls, entries...)
	}
	return json.MarshalIndent(&p, "", " ")
}

func dockerEntries(r seccomp.Rule) ([]dockerSeccompEntry, error) {
	base := dockerSeccompEntry{Names: []string{r.Syscall}, Comment: r.Why}
	switch s := r.Action.String(); {
	case r.Action == seccomp.Allow:
		base.Action = "SCMP_ACT_ALLOW"
	case r.Action == seccomp.KillProcess:
		base.Action = "SCMP_ACT_KILL_PROCESS"
	case len(s) > 6 && s[:6] == "errno(":
		e := uint(uint32(r.Action) & 0xffff)
		base.Action, base.ErrnoRet = "SCMP_ACT_ERRNO", &e
	default:
		return nil, fmt.Errorf("action %s has no Docker equivalent", s)
	}
	// One entry per alternative: all conditions but ArgAnyBit are ANDed
	// into every entry; an ArgAnyBit multiplies the entries by its bits.
	entries := []dockerSeccompEntry{base}
	seen := map[int]bool{}
	for _, m := range r.Args {
		if m.Index < 0 || m.Index > 5 {
			return nil, fmt.Errorf("argument index %d", m.Index)
		}
		// libseccomp keeps one comparison per argument in a rule (a
		// second one replaces the first). For a rule that denies, dropping
		// the later comparisons on an argument only widens what it denies
		// (personality: everything but the query 0xffffffff, PER_LINUX
		// included); for a rule that allows it would widen what passes.
		if seen[m.Index] {
			if base.Action == "SCMP_ACT_ALLOW" {
				return nil, fmt.Errorf("two conditions on argument %d cannot be expressed for libseccomp", m.Index)
			}
			continue
		}
		seen[m.Index] = true
		var alts []dockerSeccompArg
		switch m.Op {
		case seccomp.ArgEqual:
			alts = []dockerSeccompArg{{Index: uint(m.Index), Value: uint64(m.Mask), ValueTwo: uint64(m.Value), Op: "SCMP_CMP_MASKED_EQ"}}
		case seccomp.ArgNotEqual:
			if m.Mask != 0xffffffff {
				return nil, errors.New("masked inequality has no libseccomp equivalent")
			}
			alts = []dockerSeccompArg{{Index: uint(m.Index), Value: uint64(m.Value), Op: "SCMP_CMP_NE"}}
		case seccomp.ArgAnyBit:
			for bit := uint32(1); bit != 0; bit <<= 1 {
				if m.Mask&bit != 0 {
					alts = append(alts, dockerSeccompArg{Index: uint(m.Index), Value: uint64(bit), ValueTwo: uint64(bit), Op: "SCMP_CMP_MASKED_EQ"})
				}
			}
		default:
			return nil, fmt.Errorf("unknown argument operator %d", m.Op)
		}
		var next []dockerSeccompEntry
		for _, e := range entries {
			for _, a := range alts {
				e2 := e
				e2.Args = append(append([]dockerSeccompArg(nil), e.Args...), a)
				next = append(next, e2)
			}
		}
		entries = next
	}
	return entries, nil
}
