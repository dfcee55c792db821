package seccomp

import (
	"fmt"
	"strings"
	"syscall"
)

// Action is the raw SECCOMP_RET_* value a filter returns for a system call.
type Action uint32

// Raw seccomp return values (linux/seccomp.h). They are spelled out here so
// that the package and its tables compile on every GOOS.
const (
	retKillProcess uint32 = 0x80000000
	retErrno       uint32 = 0x00050000
	retAllow       uint32 = 0x7fff0000
	retDataMask    uint32 = 0x0000ffff
)

const (
	// Allow lets the system call run.
	Allow Action = Action(retAllow)
	// KillProcess kills the whole process with SIGSYS, as if by a signal it
	// cannot catch. Used for calls made under a foreign architecture.
	KillProcess Action = Action(retKillProcess)
)

// Errno returns the action that fails the system call with errno e without
// running it.
func Errno(e syscall.Errno) Action {
	return Action(retErrno | uint32(e)&retDataMask)
}

// String names the action: "allow", "kill-process", "errno(EPERM)".
func (a Action) String() string {
	switch {
	case a == Allow:
		return "allow"
	case a == KillProcess:
		return "kill-process"
	case uint32(a)&^retDataMask == retErrno:
		e := syscall.Errno(uint32(a) & retDataMask)
		return "errno(" + errnoName(e) + ")"
	}
	return fmt.Sprintf("action(%#08x)", uint32(a))
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EACCES:
		return "EACCES"
	}
	return fmt.Sprintf("%d", uint32(e))
}

// ArgOp is how an [ArgMatch] compares an argument.
type ArgOp uint8

const (
	// ArgEqual holds when arg&Mask == Value.
	ArgEqual ArgOp = iota
	// ArgNotEqual holds when arg&Mask != Value.
	ArgNotEqual
	// ArgAnyBit holds when arg&Mask != 0 (Value is unused).
	ArgAnyBit
)

// ArgMatch is a condition on one system call argument.
//
// Only the low 32 bits of the argument are compared. Every argument the
// table inspects is one the kernel itself truncates to 32 bits (an int or
// unsigned int parameter, or clone's flags, of which the kernel keeps only
// lower_32_bits), so the high word cannot be used to slip past a match.
type ArgMatch struct {
	Index int // argument number, 0 to 5
	Op    ArgOp
	Mask  uint32
	Value uint32
}

// String renders the condition as C, e.g. "(arg0 & 0x7e020000) != 0".
func (m ArgMatch) String() string {
	arg := fmt.Sprintf("arg%d", m.Index)
	if m.Mask != 0xffffffff || m.Op == ArgAnyBit {
		arg = fmt.Sprintf("(arg%d & %#x)", m.Index, m.Mask)
	}
	switch m.Op {
	case ArgEqual:
		return fmt.Sprintf("%s == %#x", arg, m.Value)
	case ArgNotEqual:
		return fmt.Sprintf("%s != %#x", arg, m.Value)
	case ArgAnyBit:
		return arg + " != 0"
	}
	return fmt.Sprintf("arg%d ?op%d", m.Index, m.Op)
}

// Rule is one row of the filter table. A rule matches a system call when the
// number equals Nr and every condition in Args holds (no conditions: every
// call). The first matching rule decides; a call no rule matches is allowed.
type Rule struct {
	Syscall string // name, e.g. "clone"
	Nr      uint32 // number on the filter's architecture
	Args    []ArgMatch
	Action  Action
	Why     string // one line, for warden doctor and reviewers
}

// String renders the rule on one line, e.g.
// "clone (arg0 & 0x7e020000) != 0 -> errno(EPERM)".
func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.Syscall)
	for i, m := range r.Args {
		if i == 0 {
			b.WriteString(" ")
		} else {
			b.WriteString(" && ")
		}
		b.WriteString(m.String())
	}
	b.WriteString(" -> ")
	b.WriteString(r.Action.String())
	return b.String()
}

func (r Rule) clone() Rule {
	r.Args = append([]ArgMatch(nil), r.Args...)
	return r
}
