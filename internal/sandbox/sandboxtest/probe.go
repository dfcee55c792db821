package sandboxtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeArg is the first argument that makes this test binary, run inside
// a jail, make one attempt (a system call, a connection) and print its
// outcome instead of running tests.
const probeArg = "sandboxtest-probe"

func errnoName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if e == 0 {
			return "ok"
		}
		return unix.ErrnoName(e)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// probe makes one attempt and reports its errno ("EPERM", "ok", ...) or
// result. The probes that must be killed never return.
func probe(args []string) string {
	if len(args) == 0 {
		return "no probe"
	}
	raw := func(nr uintptr, a ...uintptr) string {
		a = append(a, 0, 0, 0, 0, 0, 0)
		_, _, e := unix.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
		return errnoName(e)
	}
	switch args[0] {
	case "ptrace":
		return raw(unix.SYS_PTRACE, unix.PTRACE_TRACEME)
	case "io_uring":
		var params [120]byte
		return raw(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)))
	case "bpf":
		return raw(unix.SYS_BPF, 999, 0, 0)
	case "tiocsti":
		// On a pipe the ioctl itself would say ENOTTY; EPERM is the filter.
		c := byte('x')
		return raw(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "ioctl-tiocsti-highbits":
		c := byte('x')
		return raw(unix.SYS_IOCTL, 0, 0xffffffff00000000|unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
	case "personality":
		return raw(unix.SYS_PERSONALITY, 0x0040000) // ADDR_NO_RANDOMIZE
	case "personality-query":
		return raw(unix.SYS_PERSONALITY, 0xffffffff)
	case "personality-linux":
		return raw(unix.SYS_PERSONALITY, 0)
	case "clone3":
		return raw(unix.SYS_CLONE3, 0, 0)
	case "clone-newuser":
		r, _, e := unix.RawSyscall6(unix.SYS_CLONE, unix.CLONE_NEWUSER|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if e == 0 && r == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		return errnoName(e)
	case "unshare":
		return raw(unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	case "mount":
		return raw(unix.SYS_MOUNT, 0, 0, 0, 0, 0)
	case "keyctl":
		return raw(unix.SYS_KEYCTL, 0, 0, 0)
	case "open_tree_attr":
		return raw(unix.SYS_OPEN_TREE_ATTR, ^uintptr(0), 0, 0, 0, 0)
	case "x32", "int80":
		if !hasI386 {
			return "no foreign architecture here"
		}
		// libseccomp kills the calling thread (SECCOMP_RET_KILL_THREAD) on a
		// foreign ABI; the Go runtime goes on without it, so the call runs
		// on a thread of its own and its silence is the verdict. warden's
		// own filter kills the whole process.
		res := make(chan string, 1)
		go func() {
			runtime.LockOSThread()
			if args[0] == "x32" {
				res <- raw(0x40000000 | unix.SYS_GETPID)
			} else if r := int32(i386Getpid()); r > 0 {
				res <- "ok"
			} else {
				res <- fmt.Sprintf("ret%d", r)
			}
		}()
		select {
		case r := <-res:
			return r
		case <-time.After(2 * time.Second):
			return "thread killed"
		}
	case "alloc":
		// Allocate and touch N MiB.
		var n int
		fmt.Sscan(args[1], &n)
		keep := make([][]byte, 0, n)
		for range n {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("allocated %d MiB", len(keep))
	case "control-status":
		// GET /v1/status on a warden serve's control socket.
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", args[1])
			},
		}}
		resp, err := c.Get("http://warden/v1/status")
		if err != nil {
			return "error: " + err.Error()
		}
		resp.Body.Close()
		return strconv.Itoa(resp.StatusCode)
	case "connect", "connect-unix":
		// A TCP address, or a unix socket: a path or an abstract name
		// starting with '@'.
		network := "tcp"
		if args[0] == "connect-unix" {
			network = "unix"
		}
		c, err := net.DialTimeout(network, args[1], 3*time.Second)
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		b := make([]byte, 7)
		n, _ := c.Read(b)
		return string(b[:n])
	case "http-get":
		// GET a URL through the proxy the environment names (as a program
		// in the jail would), trusting SSL_CERT_FILE; a header value
		// "ENV:NAME" is the variable's value (a placeholder).
		return httpGet(args[1:])
	case "proxy-connect":
		// CONNECT target through the HTTP proxy; the answer's status line.
		// A target "hex:…" is hex-decoded (bytes an argument cannot hold).
		target := args[1]
		if h, ok := strings.CutPrefix(target, "hex:"); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				return "error: " + err.Error()
			}
			target = string(b)
		}
		return proxyConnect(target, "")
	case "tunnel-connect":
		// CONNECT to an allowed host, then a CONNECT to another inside it.
		return proxyConnect(args[1], args[2])
	case "http-download":
		// GET a URL (through the environment's proxy) and discard the body:
		// "BYTES SECONDS".
		t0 := time.Now()
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
		resp, err := c.Get(args[1])
		if err != nil {
			return "error: " + err.Error()
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%d %f", n, time.Since(t0).Seconds())
	case "http-latency":
		// N GETs of a URL, each on a new connection (through the
		// environment's proxy): the median time per request in µs.
		n, _ := strconv.Atoi(args[2])
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
		times := make([]time.Duration, 0, n)
		for range n {
			t0 := time.Now()
			resp, err := c.Get(args[1])
			if err != nil {
				return "error: " + err.Error()
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			times = append(times, time.Since(t0))
		}
		slices.Sort(times)
		return strconv.FormatInt(times[len(times)/2].Microseconds(), 10)
	case "udp":
		c, err := net.Dial("udp", args[1])
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		if _, err := c.Write([]byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01")); err != nil {
			return "refused: " + err.Error()
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 512)
		if n, err := c.Read(b); err != nil {
			return "no answer: " + err.Error()
		} else {
			return fmt.Sprintf("answered %d bytes", n)
		}
	case "lookup":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[1])
		if err != nil {
			return "no answer: " + err.Error()
		}
		return fmt.Sprintf("resolved %v", addrs)
	case "unix-bytes":
		// Speak bytes (not a descriptor) to a unix socket; what comes back.
		c, err := net.DialTimeout("unix", args[1], 3*time.Second)
		if err != nil {
			return "refused: " + err.Error()
		}
		defer c.Close()
		c.Write([]byte("CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n"))
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b, _ := io.ReadAll(c)
		return fmt.Sprintf("answered %q", b)
	case "fd":
		// Whether descriptor N is open in this process, and what it is.
		n, _ := strconv.Atoi(args[1])
		var st unix.Stat_t
		if err := unix.Fstat(n, &st); err != nil {
			return "closed: " + errnoName(err)
		}
		l, _ := os.Readlink("/proc/self/fd/" + args[1])
		return "open: " + l
	}
	return "unknown probe " + args[0]
}

func httpGet(args []string) string {
	req, err := http.NewRequest(http.MethodGet, args[0], nil)
	if err != nil {
		return "error: " + err.Error()
	}
	for _, h := range args[1:] {
		k, v, _ := strings.Cut(h, ": ")
		if name, ok := strings.CutPrefix(v, "ENV:"); ok {
			v = os.Getenv(name)
		} else if pre, name, ok := strings.Cut(v, " ENV:"); ok {
			v = pre + " " + os.Getenv(name)
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
	return fmt.Sprintf("status %d: %s", resp.StatusCode, b)
}

// proxyConnect opens a CONNECT tunnel to target through the HTTP proxy of
// HTTPS_PROXY; with inner, it sends a CONNECT to inner inside the tunnel.
// It returns the last status line it read.
func proxyConnect(target, inner string) string {
	u, err := url.Parse(os.Getenv("HTTPS_PROXY"))
	if err != nil || u.Host == "" {
		return "error: no HTTPS_PROXY"
	}
	c, err := net.DialTimeout("tcp", u.Host, 3*time.Second)
	if err != nil {
		return "refused: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	status := func(t string) string {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", t, t)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return "error: " + err.Error()
		}
		if resp.StatusCode/100 == 2 {
			return resp.Status // the tunnel follows, not a body
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Sprintf("%s %s", resp.Status, bytes.TrimSpace(body))
	}
	s := status(target)
	if inner == "" || !strings.HasPrefix(s, "200") {
		return s
	}
	return status(inner)
}
