package egress

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Kernel-side carrying of opaque tunnels (a BPF sockmap).
//
// Once a CONNECT or SOCKS5 tunnel has been admitted and its first bytes
// checked (the ClientHello's server name, or the sniff that found neither
// TLS nor HTTP), and no brokered secret is involved, nothing more is read
// from it: the bytes are only carried. Carried in user space they cost
// two copies (a read from one socket and a write to the other) per byte.
// Here both sockets go into a SOCKHASH with a stream-verdict program that
// redirects each skb a socket receives to the egress of its peer, so the
// bytes never reach user space.
//
// Pairing: two SOCKHASHes. "targets" has no program: a socket in it is
// only something to redirect to, stored under its peer's socket cookie.
// "sources" carries the verdict program: a socket in it has every skb it
// receives looked up by its own cookie in targets and sent out of the
// socket found there. A tunnel's two sockets go into targets first and
// into sources after, so no skb ever finds its peer missing; a lookup that
// finds nothing drops the skb. Socket cookies are unique for the life of
// the kernel, so a socket can only ever be redirected to the peer it was
// paired with: two tunnels cannot exchange bytes, and a closed socket's
// entries are gone (the kernel removes them).
//
// What stays in user space: each side is still read by the tunnel's copy
// loop. With the socket in the map, tcp_bpf's recvmsg hands the receive
// queue to the program (bytes that arrived before the insertion included)
// and returns only at end of stream, so the loop's read ends at the
// client's or the server's FIN as before. The redirect itself is
// asynchronous (the kernel queues the skb on the peer and a worker sends
// it), so before the FIN is passed on the loop waits until every byte the
// one side received has been queued on the other (byte counts from
// TCP_INFO and SIOCINQ/SIOCOUTQ); the same counts are the audit's.
//
// Loading needs CAP_BPF (or root); without it, or on any error, tunnels
// are copied in user space as before, and the audit says which ran
// (Event.Carried).

// sockRedirect is the process's sockmap and its verdict program.
type sockRedirect struct {
	sources, targets *ebpf.Map
	prog             *ebpf.Program
}

const sockRedirectEntries = 1 << 16

var (
	redirectOnce sync.Once
	redirect     *sockRedirect
	redirectErr  error
)

// KernelTunnels says whether checked tunnels are carried in the kernel
// (nil) or why they are copied by warden (loading the sockmap and its
// program needs CAP_BPF, or root).
func KernelTunnels() error {
	_, err := kernelRedirect()
	if err != nil {
		return fmt.Errorf("tunnels are copied in user space: %w", err)
	}
	return nil
}

// kernelRedirect returns the loaded sockmap, loading it on first use; an
// error means tunnels are copied in user space.
func kernelRedirect() (*sockRedirect, error) {
	redirectOnce.Do(func() { redirect, redirectErr = loadRedirect() })
	return redirect, redirectErr
}

func loadRedirect() (r *sockRedirect, err error) {
	newHash := func(name string) (*ebpf.Map, error) {
		return ebpf.NewMap(&ebpf.MapSpec{
			Name:       name,
			Type:       ebpf.SockHash,
			KeySize:    8, // a socket cookie
			ValueSize:  8, // the socket (a descriptor on update, a cookie on lookup)
			MaxEntries: sockRedirectEntries,
		})
	}
	r = &sockRedirect{}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.targets, err = newHash("warden_targets"); err != nil {
		return nil, fmt.Errorf("create sockhash: %w", err)
	}
	if r.sources, err = newHash("warden_sources"); err != nil {
		return nil, fmt.Errorf("create sockhash: %w", err)
	}
	r.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:       "warden_tunnel",
		Type:       ebpf.SkSKB,
		AttachType: ebpf.AttachSkSKBVerdict,
		License:    "Dual MIT/GPL",
		Instructions: asm.Instructions{
			// An skb without data (a FIN alone) is dropped (SK_DROP):
			// TCP has taken the FIN in already (the socket's state, and
			// the copy loop's read, which ends and passes it on), and
			// either other verdict poisons the peer: redirected, or
			// passed to its own socket behind queued bytes, the kernel
			// handles zero bytes as a broken pipe and stops the socket's
			// redirects, dropping what was queued (kernel 6.18).
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // skb->len
			asm.JNE.Imm(asm.R2, 0, "redirect"),
			asm.Mov.Imm(asm.R0, 0), // SK_DROP
			asm.Return(),
			asm.Mov.Reg(asm.R6, asm.R1).WithSymbol("redirect"),
			// key = bpf_get_socket_cookie(skb): this socket's cookie,
			// under which its peer is stored in targets.
			asm.FnGetSocketCookie.Call(),
			asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
			// return bpf_sk_redirect_hash(skb, &targets, &key, 0): to
			// the peer's egress; SK_DROP when it is not (or no longer)
			// there.
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.LoadMapPtr(asm.R2, r.targets.FD()),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, -8),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnSkRedirectHash.Call(),
			asm.Return(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("load verdict program: %w", err)
	}
	if err := link.RawAttachProgram(link.RawAttachProgramOptions{Target: r.sources.FD(), Program: r.prog, Attach: ebpf.AttachSkSKBVerdict}); err != nil {
		return nil, fmt.Errorf("attach verdict program: %w", err)
	}
	return r, nil
}

func (r *sockRedirect) close() {
	if r.prog != nil {
		r.prog.Close()
	}
	for _, m := range []*ebpf.Map{r.sources, r.targets} {
		if m != nil {
			m.Close()
		}
	}
}

// kernelPair is a tunnel whose two sockets are in the sockmap.
type kernelPair struct {
	r              *sockRedirect
	client, up     *net.TCPConn
	cookieC, cookU uint64
	// Bytes consumed in user space from each side and bytes written to
	// each side when the pair went in: what the kernel carries is counted
	// from there.
	readC, readU, wroteC, wroteU uint64
	// upKernel: the client's bytes go the kernel's way too (else only the
	// server's do, and the client's are copied).
	upKernel bool
}

// pairKernel puts client and up into the sockmap, each redirected to the
// other. Neither may be read elsewhere while it runs (the caller has
// stopped its copy loops); everything read before has been written on.
// It first reads both receive queues empty (writing the bytes on, counted
// in up and down) because the kernel hands a partly read skb to the
// program whole: bytes already read here — a CONNECT request, a checked
// ClientHello — would be sent again. A nil pair (with the reason) means
// the tunnel stays in user space.
func pairKernel(client, up net.Conn) (p *kernelPair, upN, downN int64, err error) {
	r, err := kernelRedirect()
	if err != nil {
		return nil, 0, 0, err
	}
	c, ok1 := client.(*net.TCPConn)
	u, ok2 := up.(*net.TCPConn)
	if !ok1 || !ok2 {
		return nil, 0, 0, errors.New("not two TCP sockets")
	}
	upN, err = readQueueEmpty(u, c)
	if err != nil {
		return nil, upN, 0, err
	}
	downN, err = readQueueEmpty(c, u)
	if err != nil {
		return nil, upN, downN, err
	}
	p, err = pairSockets(r, c, u)
	return p, upN, downN, err
}

func pairSockets(r *sockRedirect, c, u *net.TCPConn) (*kernelPair, error) {
	p := &kernelPair{r: r, client: c, up: u}
	var err error
	if p.cookieC, err = sockCookie(c); err != nil {
		return nil, err
	}
	if p.cookU, err = sockCookie(u); err != nil {
		return nil, err
	}
	if p.readC, err = consumed(c); err != nil {
		return nil, err
	}
	if p.readU, err = consumed(u); err != nil {
		return nil, err
	}
	if p.wroteC, err = written(c); err != nil {
		return nil, err
	}
	if p.wroteU, err = written(u); err != nil {
		return nil, err
	}
	// Each as a target first (under its peer's cookie), then as a source
	// (under its own): a source's skbs always find their target.
	steps := []struct {
		m   *ebpf.Map
		c   *net.TCPConn
		key uint64
	}{{r.targets, u, p.cookieC}, {r.targets, c, p.cookU}, {r.sources, u, p.cookU}, {r.sources, c, p.cookieC}}
	for i, st := range steps {
		if err := insert(st.m, st.c, st.key); err != nil {
			if i == 3 {
				// The download already goes the kernel's way and cannot
				// go back (bytes may be queued on the client); the
				// upload, whose source is not in, stays in user space.
				return p, nil
			}
			for _, done := range steps[:i] {
				done.m.Delete(done.key)
			}
			return nil, err
		}
	}
	p.upKernel = true
	return p, nil
}

// readQueueEmpty reads src's receive queue until it is empty, without
// waiting, writing the bytes to dst. A sender faster than the reading
// (the queue never found empty) leaves the tunnel to the copy.
func readQueueEmpty(dst, src *net.TCPConn) (int64, error) {
	rc, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	var n int64
	for range 16 {
		q, err := ioctlInt(src, unix.SIOCINQ)
		if err != nil || q == 0 {
			return n, err
		}
		var m int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			m, rerr = unix.Read(int(fd), *buf)
			return true // never wait: the queue holds q bytes
		}); err != nil {
			return n, err
		}
		if rerr != nil || m <= 0 {
			return n, fmt.Errorf("read the receive queue: %v (%d bytes)", rerr, m)
		}
		w, err := dst.Write((*buf)[:m])
		n += int64(w)
		if err != nil {
			return n, err
		}
	}
	return n, errors.New("the receive queue did not empty")
}

func insert(m *ebpf.Map, c *net.TCPConn, key uint64) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var uerr error
	if err := rc.Control(func(fd uintptr) {
		uerr = m.Update(key, uint64(fd), ebpf.UpdateNoExist)
	}); err != nil {
		return err
	}
	if uerr != nil {
		return fmt.Errorf("add socket to the sockmap: %w", uerr)
	}
	return nil
}

// unpair takes both sockets out of the map (closing them would too).
func (p *kernelPair) unpair() {
	p.r.sources.Delete(p.cookieC)
	p.r.sources.Delete(p.cookU)
	p.r.targets.Delete(p.cookieC)
	p.r.targets.Delete(p.cookU)
}

// drainUp waits until every byte the client sent has been queued on up,
// and returns how many the kernel carried; drainDown the other way.
// eof says the read side ended at a FIN (which TCP_INFO counts as a byte).
func (p *kernelPair) drainUp(eof bool) int64 { return drain(p.client, p.up, p.readC, p.wroteU, eof) }
func (p *kernelPair) drainDown(eof bool) int64 {
	return drain(p.up, p.client, p.readU, p.wroteC, eof)
}

// drain waits, after from's end of stream, until the bytes from received
// since the pairing (all of which the program redirected) are in to's
// send queue, so that to's FIN goes after them. It gives up when to is
// gone or when nothing moves for a second while to's send queue is empty
// (bytes the kernel dropped: the client or server had gone).
func drain(from, to *net.TCPConn, read0, wrote0 uint64, eof bool) int64 {
	ti, err := tcpInfo(from)
	if err != nil {
		return 0
	}
	recv := ti.Bytes_received
	if eof || finReceived(ti.State) {
		recv-- // the FIN
	}
	want := recv - read0
	var last uint64
	idle := time.Now()
	for wait := 20 * time.Microsecond; ; wait = min(2*wait, 5*time.Millisecond) {
		w, err := written(to)
		if errors.Is(err, errUnsettled) {
			time.Sleep(wait) // acks arriving all along: read again
			continue
		}
		if err != nil {
			return int64(last) // to is gone
		}
		got := w - wrote0
		if got >= want {
			return int64(got)
		}
		if got != last {
			last, idle = got, time.Now()
		} else if time.Since(idle) > time.Second {
			if q, err := ioctlInt(to, unix.SIOCOUTQ); err != nil || q == 0 {
				return int64(got)
			}
			idle = time.Now()
		}
		time.Sleep(wait)
	}
}

// finReceived: TCP states a socket reaches only after its peer's FIN (or,
// for TCP_CLOSE, a reset, where bytes may be lost anyway).
func finReceived(state uint8) bool {
	switch state {
	case 8, 9, 11, 6, 7: // CLOSE_WAIT, LAST_ACK, CLOSING, TIME_WAIT, CLOSE
		return true
	}
	return false
}

func sockCookie(c *net.TCPConn) (uint64, error) {
	var v uint64
	err := control(c, func(fd int) error {
		var e error
		v, e = unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
		return e
	})
	return v, err
}

func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, error) {
	var ti *unix.TCPInfo
	err := control(c, func(fd int) error {
		var e error
		ti, e = unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		return e
	})
	return ti, err
}

func received(c *net.TCPConn) (uint64, error) {
	ti, err := tcpInfo(c)
	if err != nil {
		return 0, err
	}
	return ti.Bytes_received, nil
}

// consumed is how many bytes c has handed to its reader (received, less
// what waits in the receive queue), read as one consistent pair.
func consumed(c *net.TCPConn) (uint64, error) {
	for range 100 {
		r1, err := received(c)
		if err != nil {
			return 0, err
		}
		q, err := ioctlInt(c, unix.SIOCINQ)
		if err != nil {
			return 0, err
		}
		r2, err := received(c)
		if err != nil {
			return 0, err
		}
		if r1 == r2 {
			return r1 - uint64(q), nil
		}
	}
	return 0, errUnsettled
}

var errUnsettled = errors.New("the socket's counters moved while read")

// written is how many bytes have been queued on c for sending (acked,
// plus what waits in the send queue), read as one consistent pair.
func written(c *net.TCPConn) (uint64, error) {
	for range 20 {
		t1, err := tcpInfo(c)
		if err != nil {
			return 0, err
		}
		q, err := ioctlInt(c, unix.SIOCOUTQ)
		if err != nil {
			return 0, err
		}
		t2, err := tcpInfo(c)
		if err != nil {
			return 0, err
		}
		if t1.Bytes_acked == t2.Bytes_acked {
			return t1.Bytes_acked + uint64(q), nil
		}
	}
	return 0, errUnsettled
}

func ioctlInt(c *net.TCPConn, req uint) (int, error) {
	var v int
	err := control(c, func(fd int) error {
		var e error
		v, e = unix.IoctlGetInt(fd, req)
		return e
	})
	return v, err
}

func control(c *net.TCPConn, f func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
