package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// sockDiag finds a TCP socket's inode by its exact addresses and ports with
// the kernel's sock_diag netlink interface (inet_diag, linux/inet_diag.h):
// one lookup in the kernel's hash tables, where reading /proc/PID/net/tcp
// makes the kernel print every socket of the namespace (thousands, once
// TIME_WAIT ones pile up) to be scanned. The netlink socket is opened in
// the jail's network namespace once (by a thread that enters it and comes
// back) and used from any thread after: a socket keeps the namespace it
// was made in.
type sockDiag struct {
	mu sync.Mutex
	fd int
}

// openSockDiag opens a sock_diag socket in the network namespace of pid.
//
// The thread that enters the namespace comes back to this process's own
// before it is released: a thread a locked goroutine leaves behind is
// ended by the runtime, and the thread may be one that started a jail with
// a parent-death signal (bubblewrap's --die-with-parent), which its end
// would kill. So where this process cannot come back (no right over its
// own namespace), it does not go: attribution then reads net/tcp.
func openSockDiag(pid int) (*sockDiag, error) {
	own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(own)
	target, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sock_diag in the namespace of %d: %w", pid, err)
	}
	defer unix.Close(target)

	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// Entering the namespace we are in proves we may come back to it.
		if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("sock_diag: this process may not switch network namespaces: %w", err)}
			return
		}
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("sock_diag in the namespace of %d: %w", pid, err)}
			return
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if berr := unix.Setns(own, unix.CLONE_NEWNET); berr != nil {
			// Stuck in the jail's namespace (just shown not to happen): this
			// thread runs nothing else and is not ended either.
			if err == nil {
				unix.Close(fd)
			}
			ch <- result{-1, fmt.Errorf("sock_diag: could not return to this process's namespace: %w", berr)}
			select {}
		}
		runtime.UnlockOSThread()
		if err != nil {
			err = fmt.Errorf("sock_diag in the namespace of %d: %w", pid, err)
		}
		ch <- result{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	fd := r.fd
	tv := unix.Timeval{Sec: 1}
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return &sockDiag{fd: fd}, nil
}

func (d *sockDiag) Close() { unix.Close(d.fd) }

const (
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
	inetDiagNoCookie = ^uint32(0)
)

// inode returns the inode of the TCP socket whose local address is src and
// remote dst (0: none).
func (d *sockDiag) inode(src, dst netip.AddrPort) (uint32, error) {
	if src.Addr().Is4() != dst.Addr().Is4() {
		return 0, errors.New("mixed address families")
	}
	req := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_INET6
	if src.Addr().Is4() {
		r[0] = unix.AF_INET
	}
	r[1] = unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xfff) // every state
	id := r[8:]                                 // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], src.Port())
	binary.BigEndian.PutUint16(id[2:], dst.Port())
	s, t := src.Addr().As16(), dst.Addr().As16()
	if src.Addr().Is4() {
		a, b := src.Addr().As4(), dst.Addr().As4()
		copy(id[4:], a[:])
		copy(id[20:], b[:])
	} else {
		copy(id[4:], s[:])
		copy(id[20:], t[:])
	}
	binary.NativeEndian.PutUint32(id[40:], inetDiagNoCookie)
	binary.NativeEndian.PutUint32(id[44:], inetDiagNoCookie)

	d.mu.Lock()
	defer d.mu.Unlock()
	if err := unix.Sendto(d.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(d.fd, buf, 0)
	if err != nil {
		return 0, err
	}
	for b := buf[:n]; len(b) >= unix.NLMSG_HDRLEN; {
		l := int(binary.NativeEndian.Uint32(b[0:]))
		typ := binary.NativeEndian.Uint16(b[4:])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return 0, errors.New("sock_diag: malformed answer")
		}
		data := b[unix.NLMSG_HDRLEN:l]
		switch typ {
		case unix.NLMSG_ERROR:
			if len(data) >= 4 {
				if e := int32(binary.NativeEndian.Uint32(data)); e != 0 {
					return 0, unix.Errno(-e)
				}
			}
			return 0, nil
		case unix.SOCK_DIAG_BY_FAMILY:
			if len(data) >= inetDiagMsgLen {
				return binary.NativeEndian.Uint32(data[68:]), nil
			}
		}
		next := (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
		if next >= len(b) {
			break
		}
		b = b[next:]
	}
	return 0, nil
}
