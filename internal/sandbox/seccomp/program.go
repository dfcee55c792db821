package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
)

// ErrUnsupportedArch is returned on an architecture this package has no
// table for. The caller must not run a jail without the filter: it fails
// closed.
var ErrUnsupportedArch = errors.New("seccomp: no system call table for this architecture")

// Options adjusts the filter. A nil *Options is the default filter.
type Options struct {
	// DenyNetwork also fails socket(2) for AF_INET and AF_INET6 with EPERM.
	// Network isolation is the network namespace's job (bwrap --unshare-net
	// leaves only a private loopback); this is a second wall for lockdown,
	// where even loopback inside the jail is not needed. AF_UNIX and
	// AF_NETLINK stay allowed.
	DenyNetwork bool
}

// Offsets in struct seccomp_data (linux/seccomp.h): int nr; __u32 arch;
// __u64 instruction_pointer; __u64 args[6].
const (
	offNr   = 0
	offArch = 4
	offArgs = 16

	seccompDataSize = 64

	// x32SyscallBit marks an x32 system call number on x86_64 (__X32_SYSCALL_BIT).
	x32SyscallBit = 0x40000000

	// maxInstructions is the kernel's BPF_MAXINSNS.
	maxInstructions = 4096
)

// arch describes the architecture a filter is built for. The argument
// offsets assume a little-endian architecture (the low word of a 64-bit
// argument comes first), true of every arch this package supports.
type arch struct {
	name      string
	auditArch uint32 // AUDIT_ARCH_* a native system call carries
	x32Bit    bool   // kill numbers with x32SyscallBit set
	extra     []Rule // rows only this architecture has
}

func (a *arch) rules(opts *Options) []Rule {
	rules := commonRules(opts)
	return append(rules, a.extra...)
}

// Rules returns a copy of the default filter's table for this architecture,
// in evaluation order, for warden doctor and status. It is nil where
// [Program] fails with [ErrUnsupportedArch].
func Rules() []Rule {
	a, err := nativeArch()
	if err != nil {
		return nil
	}
	rules := a.rules(nil)
	out := make([]Rule, len(rules))
	for i, r := range rules {
		out[i] = r.clone()
	}
	return out
}

// Program builds the filter for the architecture warden runs on.
//
// The program first kills the process when seccomp_data.arch is not the
// native architecture (and, on x86_64, when the number carries the x32 bit),
// then walks the rule table in order, returning the first matching rule's
// action, and allows everything else.
func Program(opts *Options) ([]bpf.Instruction, error) {
	a, err := nativeArch()
	if err != nil {
		return nil, err
	}
	return build(a, a.rules(opts))
}

// build compiles rules for a. The layout is linear: each rule is one short
// block whose conditional jumps only reach the end of the block, so no jump
// offset ever nears the 255 limit of classic BPF however long the table is.
func build(a *arch, rules []Rule) ([]bpf.Instruction, error) {
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: a.auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKillProcess},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if a.x32Bit {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32SyscallBit, SkipFalse: 1},
			bpf.RetConstant{Val: retKillProcess},
		)
	}
	nrInA := true // register A holds seccomp_data.nr
	for i, r := range rules {
		block, err := compileRule(r, nrInA)
		if err != nil {
			return nil, fmt.Errorf("seccomp: rule %d (%s): %w", i, r.Syscall, err)
		}
		prog = append(prog, block...)
		nrInA = len(r.Args) == 0
	}
	prog = append(prog, bpf.RetConstant{Val: retAllow})
	if len(prog) > maxInstructions {
		return nil, fmt.Errorf("seccomp: program has %d instructions, the kernel takes at most %d", len(prog), maxInstructions)
	}
	return prog, nil
}

func compileRule(r Rule, nrInA bool) ([]bpf.Instruction, error) {
	if len(r.Args) > 6 {
		return nil, fmt.Errorf("%d argument conditions, at most 6", len(r.Args))
	}
	var block []bpf.Instruction
	var exits []int // conditional jumps whose false branch leaves the block
	if !nrInA {
		block = append(block, bpf.LoadAbsolute{Off: offNr, Size: 4})
	}
	exits = append(exits, len(block))
	block = append(block, bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.Nr})
	for _, m := range r.Args {
		if m.Index < 0 || m.Index > 5 {
			return nil, fmt.Errorf("argument index %d out of range 0..5", m.Index)
		}
		block = append(block, bpf.LoadAbsolute{Off: uint32(offArgs + 8*m.Index), Size: 4})
		switch m.Op {
		case ArgEqual, ArgNotEqual:
			if m.Value&^m.Mask != 0 {
				return nil, fmt.Errorf("value %#x has bits outside mask %#x", m.Value, m.Mask)
			}
			if m.Mask != 0xffffffff {
				block = append(block, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: m.Mask})
			}
			cond := bpf.JumpEqual
			if m.Op == ArgNotEqual {
				cond = bpf.JumpNotEqual
			}
			exits = append(exits, len(block))
			block = append(block, bpf.JumpIf{Cond: cond, Val: m.Value})
		case ArgAnyBit:
			if m.Mask == 0 {
				return nil, errors.New("ArgAnyBit with an empty mask never matches")
			}
			exits = append(exits, len(block))
			block = append(block, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: m.Mask})
		default:
			return nil, fmt.Errorf("unknown argument operator %d", m.Op)
		}
	}
	block = append(block, bpf.RetConstant{Val: uint32(r.Action)})
	for _, j := range exits {
		ji := block[j].(bpf.JumpIf)
		ji.SkipFalse = uint8(len(block) - j - 1)
		block[j] = ji
	}
	return block, nil
}

// Assemble encodes prog as the array of struct sock_filter
// {u16 code; u8 jt; u8 jf; u32 k} in native byte order: what
// prctl(PR_SET_SECCOMP) takes and what bwrap reads from --seccomp FD.
func Assemble(prog []bpf.Instruction) ([]byte, error) {
	if len(prog) == 0 || len(prog) > maxInstructions {
		return nil, fmt.Errorf("seccomp: program has %d instructions, want 1..%d", len(prog), maxInstructions)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: failed to assemble: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
