//go:build linux && (amd64 || arm64)

package seccomp

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// sdata is a struct seccomp_data.
type sdata struct {
	nr   uint32
	arch uint32
	args [6]uint64
}

// vmBytes lays d out for x/net/bpf's VM. The kernel loads 32-bit words of
// seccomp_data in native (little-endian) order; the VM loads them
// big-endian. Writing each 32-bit word big-endian at the offset the kernel
// would read it from makes both see the same values: nr at 0, arch at 4, the
// low word of args[i] at 16+8i and its high word at 20+8i.
func (d sdata) vmBytes() []byte {
	b := make([]byte, seccompDataSize)
	binary.BigEndian.PutUint32(b[offNr:], d.nr)
	binary.BigEndian.PutUint32(b[offArch:], d.arch)
	for i, a := range d.args {
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(a>>32))
	}
	return b
}

func newVM(t testing.TB, opts *Options) *bpf.VM {
	t.Helper()
	prog, err := Program(opts)
	if err != nil {
		t.Fatalf("Program: %v", err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	return vm
}

func runVM(t testing.TB, vm *bpf.VM, d sdata) Action {
	t.Helper()
	got, err := vm.Run(d.vmBytes())
	if err != nil {
		t.Fatalf("VM run on %+v: %v", d, err)
	}
	return Action(uint32(got))
}

func native(t testing.TB) *arch {
	t.Helper()
	a, err := nativeArch()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

var (
	wantEPERM  = Errno(syscall.EPERM)
	wantENOSYS = Errno(syscall.ENOSYS)
)

// mustDeny lists, independently of the table, every system call the filter
// must refuse outright (whatever the arguments) on every architecture.
var mustDeny = map[string]uintptr{
	"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV,
	"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV, "mount": unix.SYS_MOUNT,
	"umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT, "chroot": unix.SYS_CHROOT,
	"fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG, "fsmount": unix.SYS_FSMOUNT,
	"fspick": unix.SYS_FSPICK, "move_mount": unix.SYS_MOVE_MOUNT, "open_tree": unix.SYS_OPEN_TREE,
	"open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "mount_setattr": unix.SYS_MOUNT_SETATTR,
	"unshare": unix.SYS_UNSHARE, "setns": unix.SYS_SETNS, "bpf": unix.SYS_BPF,
	"perf_event_open": unix.SYS_PERF_EVENT_OPEN, "userfaultfd": unix.SYS_USERFAULTFD,
	"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER, "init_module": unix.SYS_INIT_MODULE,
	"finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
	"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
	"add_key": unix.SYS_ADD_KEY, "keyctl": unix.SYS_KEYCTL, "request_key": unix.SYS_REQUEST_KEY,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"acct": unix.SYS_ACCT, "swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF,
	"reboot": unix.SYS_REBOOT, "settimeofday": unix.SYS_SETTIMEOFDAY,
	"clock_settime": unix.SYS_CLOCK_SETTIME, "clock_adjtime": unix.SYS_CLOCK_ADJTIME,
	"adjtimex": unix.SYS_ADJTIMEX, "quotactl": unix.SYS_QUOTACTL, "quotactl_fd": unix.SYS_QUOTACTL_FD,
	"lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE, "syslog": unix.SYS_SYSLOG, "vhangup": unix.SYS_VHANGUP,
	"nfsservctl": unix.SYS_NFSSERVCTL, "kcmp": unix.SYS_KCMP, "pidfd_getfd": unix.SYS_PIDFD_GETFD,
	"process_madvise": unix.SYS_PROCESS_MADVISE, "fanotify_init": unix.SYS_FANOTIFY_INIT,
}

type vmCase struct {
	name string
	d    sdata
	want Action
}

func call(a *arch, nr uintptr, args ...uint64) sdata {
	d := sdata{nr: uint32(nr), arch: a.auditArch}
	copy(d.args[:], args)
	return d
}

func vmCases(a *arch) []vmCase {
	const sigchld = uint64(unix.SIGCHLD)
	threadFlags := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND |
		unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID |
		unix.CLONE_CHILD_CLEARTID)
	cases := []vmCase{
		{"read", call(a, unix.SYS_READ, 0, 0, 10), Allow},
		{"write", call(a, unix.SYS_WRITE, 1, 0, 10), Allow},
		{"openat", call(a, unix.SYS_OPENAT, uint64(1<<64-100), 0, unix.O_RDONLY), Allow},
		{"execve", call(a, unix.SYS_EXECVE), Allow},
		{"getpid", call(a, unix.SYS_GETPID), Allow},
		{"mmap", call(a, unix.SYS_MMAP, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), Allow},
		{"prctl", call(a, unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1), Allow},
		{"seccomp (stacking more filters only restricts)", call(a, unix.SYS_SECCOMP), Allow},
		{"landlock_create_ruleset (the worker restricts itself)", call(a, unix.SYS_LANDLOCK_CREATE_RULESET), Allow},
		{"landlock_restrict_self", call(a, unix.SYS_LANDLOCK_RESTRICT_SELF), Allow},
		{"wait4", call(a, unix.SYS_WAIT4), Allow},

		{"clone fork", call(a, unix.SYS_CLONE, sigchld), Allow},
		{"clone vfork", call(a, unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_VFORK|sigchld), Allow},
		{"clone thread", call(a, unix.SYS_CLONE, threadFlags), Allow},
		{"clone pidfd", call(a, unix.SYS_CLONE, unix.CLONE_PIDFD|sigchld), Allow},
		{"clone exit signal 0x80 is not CLONE_NEWTIME", call(a, unix.SYS_CLONE, 0x80), Allow},
		{"clone NEWUSER in the high word is ignored by the kernel", call(a, unix.SYS_CLONE, uint64(unix.CLONE_NEWUSER)<<32|sigchld), Allow},
		{"clone3", call(a, unix.SYS_CLONE3, 0, 88), wantENOSYS},

		{"socket inet stream", call(a, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), Allow},
		{"socket inet6 dgram", call(a, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), Allow},
		{"socket inet icmp ping", call(a, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP), Allow},
		{"socket unix", call(a, unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), Allow},
		{"socket netlink raw (getifaddrs)", call(a, unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE), Allow},
		{"socket inet raw", call(a, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP), wantEPERM},
		{"socket inet6 raw nonblock cloexec", call(a, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC), wantEPERM},
		{"socket unix raw", call(a, unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_RAW), wantEPERM},
		{"socket packet raw", call(a, unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), wantEPERM},
		{"socket packet dgram", call(a, unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_DGRAM), wantEPERM},
		{"socket packet with junk in the high word", call(a, unix.SYS_SOCKET, 0xdead_0000_0000|unix.AF_PACKET, unix.SOCK_DGRAM), wantEPERM},
		{"socket key", call(a, unix.SYS_SOCKET, unix.AF_KEY, unix.SOCK_RAW, 2), wantEPERM},
		{"socket key dgram", call(a, unix.SYS_SOCKET, unix.AF_KEY, unix.SOCK_DGRAM), wantEPERM},

		{"ioctl TIOCSTI", call(a, unix.SYS_IOCTL, 0, unix.TIOCSTI, 0x1000), wantEPERM},
		{"ioctl TIOCSTI with junk in the high word", call(a, unix.SYS_IOCTL, 0, 0xffffffff_00000000|unix.TIOCSTI), wantEPERM},
		{"ioctl TIOCLINUX", call(a, unix.SYS_IOCTL, 0, unix.TIOCLINUX), wantEPERM},
		{"ioctl TCGETS", call(a, unix.SYS_IOCTL, 0, unix.TCGETS), Allow},
		{"ioctl FIONREAD", call(a, unix.SYS_IOCTL, 3, 0x541B), Allow},
		{"ioctl TIOCGWINSZ", call(a, unix.SYS_IOCTL, 1, unix.TIOCGWINSZ), Allow},

		{"personality query", call(a, unix.SYS_PERSONALITY, 0xffffffff), Allow},
		{"personality PER_LINUX", call(a, unix.SYS_PERSONALITY, 0), Allow},
		{"personality ADDR_NO_RANDOMIZE", call(a, unix.SYS_PERSONALITY, 0x0040000), wantEPERM},
		{"personality READ_IMPLIES_EXEC", call(a, unix.SYS_PERSONALITY, 0x0400000), wantEPERM},
		{"personality PER_LINUX32", call(a, unix.SYS_PERSONALITY, 0x0008), wantEPERM},

		{"unshare without flags is still refused", call(a, unix.SYS_UNSHARE, 0), wantEPERM},
		{"wrong architecture zero", sdata{nr: unix.SYS_GETPID, arch: 0}, KillProcess},
		{"wrong architecture flipped bit", sdata{nr: unix.SYS_GETPID, arch: a.auditArch ^ 1}, KillProcess},
	}
	ns := []struct {
		name string
		flag uint64
	}{
		{"NEWNS", unix.CLONE_NEWNS}, {"NEWCGROUP", unix.CLONE_NEWCGROUP}, {"NEWUTS", unix.CLONE_NEWUTS},
		{"NEWIPC", unix.CLONE_NEWIPC}, {"NEWUSER", unix.CLONE_NEWUSER}, {"NEWPID", unix.CLONE_NEWPID},
		{"NEWNET", unix.CLONE_NEWNET},
	}
	for _, f := range ns {
		cases = append(cases,
			vmCase{"clone " + f.name, call(a, unix.SYS_CLONE, f.flag|sigchld), wantEPERM},
			vmCase{"clone thread+" + f.name, call(a, unix.SYS_CLONE, f.flag|threadFlags), wantEPERM},
		)
	}
	for name, nr := range mustDeny {
		cases = append(cases,
			vmCase{name, call(a, nr), wantEPERM},
			vmCase{name + " with arguments", call(a, nr, 1, 2, 3, 4, 5, 6), wantEPERM},
		)
	}
	return append(cases, archCases(a)...)
}

func TestProgramVM(t *testing.T) {
	t.Parallel()
	a := native(t)
	vm := newVM(t, nil)
	for _, c := range vmCases(a) {
		if got := runVM(t, vm, c.d); got != c.want {
			t.Errorf("%s: nr=%d arch=%#x args=%#x: got %v, want %v", c.name, c.d.nr, c.d.arch, c.d.args, got, c.want)
		}
	}
}

func TestProgramVMDenyNetwork(t *testing.T) {
	t.Parallel()
	a := native(t)
	vm := newVM(t, &Options{DenyNetwork: true})
	cases := []vmCase{
		{"inet stream", call(a, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), wantEPERM},
		{"inet6 dgram", call(a, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), wantEPERM},
		{"unix", call(a, unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), Allow},
		{"netlink", call(a, unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), Allow},
		{"connect is not the gate", call(a, unix.SYS_CONNECT, 3), Allow},
	}
	for _, c := range cases {
		if got := runVM(t, vm, c.d); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	// Everything the default filter decides is decided the same way.
	for _, c := range vmCases(a) {
		if c.d.nr == unix.SYS_SOCKET {
			continue
		}
		if got := runVM(t, vm, c.d); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// refEval is the table's meaning written as plain Go: the oracle the
// compiled program is checked against.
func refEval(a *arch, rules []Rule, d sdata) Action {
	if d.arch != a.auditArch {
		return KillProcess
	}
	if a.x32Bit && d.nr&x32SyscallBit != 0 {
		return KillProcess
	}
	for _, r := range rules {
		if r.Nr != d.nr {
			continue
		}
		match := true
		for _, m := range r.Args {
			v := uint32(d.args[m.Index]) & m.Mask
			switch m.Op {
			case ArgEqual:
				match = match && v == m.Value
			case ArgNotEqual:
				match = match && v != m.Value
			case ArgAnyBit:
				match = match && v != 0
			}
		}
		if match {
			return r.Action
		}
	}
	return Allow
}

// TestProgramMatchesTable runs every table row, with arguments chosen to hit
// and miss each condition, through both the VM and the reference evaluator.
func TestProgramMatchesTable(t *testing.T) {
	t.Parallel()
	a := native(t)
	for _, opts := range []*Options{nil, {DenyNetwork: true}} {
		vm := newVM(t, opts)
		rules := a.rules(opts)
		n := 0
		for _, r := range rules {
			probes := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}}
			hit := [6]uint64{}
			for _, m := range r.Args {
				switch m.Op {
				case ArgEqual:
					hit[m.Index] = uint64(m.Value)
				case ArgAnyBit:
					hit[m.Index] = uint64(m.Mask)
				case ArgNotEqual:
					hit[m.Index] = uint64(^m.Value & m.Mask)
				}
			}
			probes = append(probes, hit)
			for _, args := range probes {
				d := sdata{nr: r.Nr, arch: a.auditArch, args: args}
				want := refEval(a, rules, d)
				if got := runVM(t, vm, d); got != want {
					t.Errorf("%v with args %#x: VM %v, table %v", r, args, got, want)
				}
				n++
			}
		}
		if n < 3*len(rules) {
			t.Fatalf("checked %d probes for %d rules", n, len(rules))
		}
	}
}

func TestRulesIsACopy(t *testing.T) {
	t.Parallel()
	r := Rules()
	if len(r) == 0 {
		t.Fatal("Rules() is empty")
	}
	for i := range r {
		r[i].Action = Allow
		for j := range r[i].Args {
			r[i].Args[j].Mask = 0
		}
	}
	a := native(t)
	vm := newVM(t, nil)
	if got := runVM(t, vm, call(a, unix.SYS_PTRACE)); got != wantEPERM {
		t.Fatalf("after editing Rules(): ptrace %v, want %v", got, wantEPERM)
	}
	if got := Rules()[0].Action; got == Allow {
		t.Fatalf("Rules() shares its table with callers")
	}
}

func TestRuleNamesMatchNumbers(t *testing.T) {
	t.Parallel()
	for _, r := range Rules() {
		if nr, ok := mustDeny[r.Syscall]; ok && uint32(nr) != r.Nr {
			t.Errorf("rule %q has number %d, want %d", r.Syscall, r.Nr, nr)
		}
		if r.Why == "" {
			t.Errorf("rule %v has no Why", r)
		}
	}
}

func TestRuleString(t *testing.T) {
	t.Parallel()
	var got []string
	for _, r := range Rules() {
		switch r.Syscall {
		case "clone", "clone3", "personality", "ptrace":
			got = append(got, r.String())
		}
	}
	want := []string{
		"ptrace -> errno(EPERM)",
		"clone (arg0 & 0x7e020000) != 0 -> errno(EPERM)",
		"clone3 -> errno(ENOSYS)",
		"personality arg0 != 0xffffffff && arg0 != 0x0 -> errno(EPERM)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rule strings (-want +got):\n%s", diff)
	}
	if s := KillProcess.String(); s != "kill-process" {
		t.Errorf("KillProcess.String() = %q", s)
	}
}

func TestBuildRejectsBadRules(t *testing.T) {
	t.Parallel()
	a := native(t)
	bad := []struct {
		rule Rule
		want string
	}{
		{Rule{Syscall: "x", Args: []ArgMatch{{Index: 6, Mask: 1}}}, "out of range"},
		{Rule{Syscall: "x", Args: []ArgMatch{{Index: -1, Mask: 1}}}, "out of range"},
		{Rule{Syscall: "x", Args: []ArgMatch{{Op: ArgEqual, Mask: 0xf, Value: 0x10}}}, "outside mask"},
		{Rule{Syscall: "x", Args: []ArgMatch{{Op: ArgAnyBit}}}, "never matches"},
		{Rule{Syscall: "x", Args: []ArgMatch{{Op: 9, Mask: 1}}}, "unknown argument operator"},
		{Rule{Syscall: "x", Args: make([]ArgMatch, 7)}, "at most 6"},
	}
	for _, b := range bad {
		_, err := build(a, []Rule{b.rule})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("build(%+v) = %v, want error containing %q", b.rule, err, b.want)
		}
	}
	many := make([]Rule, maxInstructions)
	for i := range many {
		many[i] = Rule{Syscall: "x", Nr: uint32(i), Action: wantEPERM}
	}
	if _, err := build(a, many); err == nil || !strings.Contains(err.Error(), "at most 4096") {
		t.Errorf("build of %d rules: %v, want too-long error", len(many), err)
	}
}

func TestAssemble(t *testing.T) {
	t.Parallel()
	prog, err := Program(nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 8*len(prog) {
		t.Fatalf("Assemble: %d bytes for %d instructions", len(raw), len(prog))
	}
	// Decode the sock_filter array back and compare with the program.
	var back []bpf.RawInstruction
	for i := 0; i < len(raw); i += 8 {
		back = append(back, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(raw[i:]),
			Jt: raw[i+2], Jf: raw[i+3],
			K: binary.NativeEndian.Uint32(raw[i+4:]),
		})
	}
	dis, ok := bpf.Disassemble(back)
	if !ok {
		t.Fatal("Disassemble could not decode every instruction")
	}
	want, _ := bpf.Assemble(prog)
	redis, _ := bpf.Disassemble(want)
	if diff := cmp.Diff(fmt.Sprint(redis), fmt.Sprint(dis)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := Assemble(nil); err == nil {
		t.Error("Assemble(nil) succeeded")
	}
	t.Logf("default filter: %d rules, %d instructions, %d bytes", len(Rules()), len(prog), len(raw))
}

func TestMemFile(t *testing.T) {
	t.Parallel()
	raw := []byte("0123456789abcdef")
	f, err := MemFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, 64)
	n, _ := f.Read(got)
	if string(got[:n]) != string(raw) {
		t.Fatalf("MemFile reads %q, want %q", got[:n], raw)
	}
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("sealed MemFile accepted a write")
	}
	if err := f.Truncate(0); err == nil {
		t.Fatal("sealed MemFile accepted a truncate")
	}
}

func FuzzProgramVM(f *testing.F) {
	a := native(f)
	f.Add(uint32(unix.SYS_GETPID), a.auditArch, uint64(0), uint64(0), uint64(0))
	f.Add(uint32(unix.SYS_CLONE), a.auditArch, uint64(unix.CLONE_NEWUSER), uint64(0), uint64(0))
	f.Add(uint32(unix.SYS_SOCKET), a.auditArch, uint64(unix.AF_INET), uint64(unix.SOCK_RAW), uint64(0))
	f.Add(uint32(unix.SYS_IOCTL), a.auditArch, uint64(0), uint64(unix.TIOCSTI), uint64(0))
	f.Add(uint32(20), uint32(unix.AUDIT_ARCH_I386), uint64(0), uint64(0), uint64(0))
	f.Add(uint32(x32SyscallBit|39), a.auditArch, uint64(0), uint64(0), uint64(0))
	vms := map[bool]*bpf.VM{false: newVM(f, nil), true: newVM(f, &Options{DenyNetwork: true})}
	rules := map[bool][]Rule{false: a.rules(nil), true: a.rules(&Options{DenyNetwork: true})}
	f.Fuzz(func(t *testing.T, nr, archVal uint32, a0, a1, a2 uint64) {
		d := sdata{nr: nr, arch: archVal, args: [6]uint64{a0, a1, a2, a2 ^ a0, a1 ^ a0, a0 + a1}}
		for _, deny := range []bool{false, true} {
			got := runVM(t, vms[deny], d)
			if archVal != a.auditArch && got != KillProcess {
				t.Fatalf("foreign arch %#x nr %d: %v, want kill-process", archVal, nr, got)
			}
			if want := refEval(a, rules[deny], d); got != want {
				t.Fatalf("nr %d arch %#x args %#x (DenyNetwork %v): VM %v, table %v", nr, archVal, d.args, deny, got, want)
			}
		}
	})
}

// countingRun is a second, minimal interpreter for the instructions the
// generator emits; it also counts how many run for one call.
func countingRun(t *testing.T, prog []bpf.Instruction, d sdata) (Action, int) {
	t.Helper()
	in := d.vmBytes()
	var a uint32
	for pc, n := 0, 1; pc < len(prog); pc, n = pc+1, n+1 {
		switch ins := prog[pc].(type) {
		case bpf.LoadAbsolute:
			a = binary.BigEndian.Uint32(in[ins.Off:])
		case bpf.ALUOpConstant:
			a &= ins.Val
		case bpf.JumpIf:
			var ok bool
			switch ins.Cond {
			case bpf.JumpEqual:
				ok = a == ins.Val
			case bpf.JumpNotEqual:
				ok = a != ins.Val
			case bpf.JumpBitsSet:
				ok = a&ins.Val != 0
			default:
				t.Fatalf("unexpected jump %v", ins)
			}
			if ok {
				pc += int(ins.SkipTrue)
			} else {
				pc += int(ins.SkipFalse)
			}
		case bpf.RetConstant:
			return Action(ins.Val), n
		default:
			t.Fatalf("unexpected instruction %v", ins)
		}
	}
	t.Fatal("ran off the end of the program")
	return 0, 0
}

// TestPathLength checks the counting interpreter against the VM on every
// table case and reports how many instructions common calls cost.
func TestPathLength(t *testing.T) {
	t.Parallel()
	a := native(t)
	prog, err := Program(nil)
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, nil)
	worst := 0
	for _, c := range vmCases(a) {
		got, n := countingRun(t, prog, c.d)
		if want := runVM(t, vm, c.d); got != want {
			t.Errorf("%s: counting interpreter %v, VM %v", c.name, got, want)
		}
		worst = max(worst, n)
	}
	for _, c := range []struct {
		name string
		d    sdata
	}{
		{"read", call(a, unix.SYS_READ)},
		{"ioctl TCGETS", call(a, unix.SYS_IOCTL, 0, unix.TCGETS)},
		{"socket inet", call(a, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM)},
		{"foreign arch", sdata{arch: 1}},
	} {
		_, n := countingRun(t, prog, c.d)
		t.Logf("%s: %d instructions", c.name, n)
	}
	t.Logf("longest path over the table cases: %d of %d instructions", worst, len(prog))
}
