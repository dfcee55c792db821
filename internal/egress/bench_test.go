package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress/relay"
	"golang.org/x/sys/unix"
)

// The benchmarks compare a client going through the whole egress path as a
// jailed command does (client → relay on loopback, which hands the socket
// to the Server over a unix socket → Server → origin) with the same client
// going straight to the origin, on loopback.
// bench/egress.sh runs them and prints the ratios.

const transferSize = 100 << 20

// benchPath starts an origin, a proxy and a relay in front of it.
type benchPath struct {
	origin, relayAddr string
	port              int
	roots             *tls.Config
}

func startBench(b *testing.B, origin net.Listener) *benchPath {
	b.Helper()
	port := origin.Addr().(*net.TCPAddr).Port
	f := baseFixture()
	p := startProxy(b, f)
	r := &relay.Relay{Socket: p.socket}
	b.Cleanup(func() { r.Close() })
	addr, err := r.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return &benchPath{origin: origin.Addr().String(), relayAddr: addr.String(), port: port,
		roots: &tls.Config{RootCAs: p.roots, ServerName: "allowed.test"}}
}

// tunnel opens a CONNECT tunnel to allowed.test through the relay.
func (bp *benchPath) tunnel(b *testing.B) net.Conn {
	c, err := net.Dial("tcp", bp.relayAddr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", bp.port, bp.port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT: %v %v", resp, err)
	}
	return &bufConn{Conn: c, r: br}
}

// sink serves transferSize bytes to every connection after it reads a
// one-line request (so the tunnel sees a client-first protocol, the common
// case, and takes its opaque path).
func sink(b *testing.B) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bufio.NewReader(c).ReadString('\n')
				for n := 0; n < transferSize; n += len(buf) {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	b.Cleanup(func() { l.Close() })
	return l
}

// paired runs direct and proxy alternately, n times each, so that a change
// in the machine's load falls on both, and reports the medians and the
// median of the pairwise ratios (proxy time / direct time).
//
// It also measures the CPU time the process spent (client, origin and,
// for the proxy, the egress server all run in it): unlike wall time on a
// shared machine, that barely moves with the load.
func paired(b *testing.B, n int, direct, proxied func()) (med, cpu [2]time.Duration, ratio float64) {
	var times, cpus [2][]time.Duration
	var ratios []float64
	for range n {
		var pair [2]time.Duration
		for i, f := range []func(){direct, proxied} {
			c0 := cpuTime()
			t0 := time.Now()
			f()
			pair[i] = time.Since(t0)
			times[i] = append(times[i], pair[i])
			cpus[i] = append(cpus[i], cpuTime()-c0)
		}
		ratios = append(ratios, float64(pair[1])/float64(pair[0]))
	}
	for i := range times {
		slices.Sort(times[i])
		slices.Sort(cpus[i])
		med[i], cpu[i] = times[i][len(times[i])/2], cpus[i][len(cpus[i])/2]
	}
	slices.Sort(ratios)
	return med, cpu, ratios[len(ratios)/2]
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportTransfer(b *testing.B, med, cpu [2]time.Duration, ratio float64) {
	mbps := func(d time.Duration) float64 { return float64(transferSize) / 1e6 / d.Seconds() }
	b.ReportMetric(mbps(med[0]), "direct-MB/s")
	b.ReportMetric(mbps(med[1]), "proxy-MB/s")
	b.ReportMetric(1/ratio, "throughput-ratio")
	b.ReportMetric(float64(cpu[0].Milliseconds()), "direct-cpu-ms")
	b.ReportMetric(float64(cpu[1].Milliseconds()), "proxy-cpu-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTransfer is a 100 MB download over raw TCP: through CONNECT
// (opaque) and straight, alternately.
func BenchmarkTransfer(b *testing.B) {
	l := sink(b)
	bp := startBench(b, l)
	read := func(c net.Conn) {
		defer c.Close()
		io.WriteString(c, "\x00go\n") // a binary first byte: opaque
		n, err := io.Copy(io.Discard, c)
		if err != nil || n != transferSize {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
	for b.Loop() {
		med, cpu, ratio := paired(b, 7, func() {
			c, err := net.Dial("tcp", bp.origin)
			if err != nil {
				b.Fatal(err)
			}
			read(c)
		}, func() { read(bp.tunnel(b)) })
		reportTransfer(b, med, cpu, ratio)
	}
}

// BenchmarkTransferHTTPS is the same 100 MB as an HTTPS download: TLS on
// both paths, the proxy checking the ClientHello and then carrying bytes.
func BenchmarkTransferHTTPS(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 256<<10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(transferSize))
		for n := 0; n < transferSize; n += len(chunk) {
			w.Write(chunk)
		}
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{originCA(b).leaf("allowed.test")}}}
	go srv.Serve(tls.NewListener(l, srv.TLSConfig))
	b.Cleanup(func() { srv.Close() })
	bp := startBench(b, l)
	client := func(dial func() (net.Conn, error)) *http.Client {
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: bp.roots,
			DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
				c, err := dial()
				if err != nil {
					return nil, err
				}
				tc := tls.Client(c, bp.roots)
				return tc, tc.Handshake()
			}}}
	}
	get := func(c *http.Client) {
		resp, err := c.Get("https://allowed.test/")
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != transferSize {
			b.Fatalf("read %d", n)
		}
	}
	direct := client(func() (net.Conn, error) { return net.Dial("tcp", bp.origin) })
	proxied := client(func() (net.Conn, error) { return bp.tunnel(b), nil })
	for b.Loop() {
		med, cpu, ratio := paired(b, 7, func() { get(direct) }, func() { get(proxied) })
		reportTransfer(b, med, cpu, ratio)
	}
}

// BenchmarkNewConnection is 1,000 small requests, each on a new
// connection, direct and through the proxy alternately: plain HTTP
// (absolute-form through the proxy) and HTTPS (CONNECT, then a TLS
// handshake with the origin). It reports the median time per request each
// way; the proxy's added latency is the difference.
func BenchmarkNewConnection(b *testing.B) {
	plain := startOrigin(b, "tcp", "127.0.0.1:0")
	secure := startOrigin(b, "tcp", "127.0.0.1:0", "allowed.test")
	for _, tc := range []struct {
		name  string
		o     *origin
		https bool
	}{{"http", plain, false}, {"https", secure, true}} {
		l, _ := net.Listen("tcp", "127.0.0.1:0") // only for startBench's port bookkeeping
		bp := startBench(b, l)
		l.Close()
		port := int(tc.o.port())
		bp.port = port
		req := fmt.Sprintf("GET / HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: close\r\n\r\n", port)
		proxyReq := fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nConnection: close\r\n\r\n", port, port)
		once := func(c net.Conn, request string) {
			if tc.https {
				tcn := tls.Client(c, bp.roots)
				if err := tcn.Handshake(); err != nil {
					b.Fatal(err)
				}
				c = tcn
			}
			io.WriteString(c, request)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("%v %v", resp, err)
			}
			io.Copy(io.Discard, resp.Body)
			c.Close()
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				med, cpu, _ := paired(b, 1000, func() {
					c, err := net.Dial("tcp", tc.o.addr.String())
					if err != nil {
						b.Fatal(err)
					}
					once(c, req)
				}, func() {
					if tc.https {
						once(bp.tunnel(b), req)
						return
					}
					c, err := net.Dial("tcp", bp.relayAddr)
					if err != nil {
						b.Fatal(err)
					}
					once(c, proxyReq)
				})
				b.ReportMetric(float64(med[0].Microseconds()), "direct-µs/req")
				b.ReportMetric(float64(med[1].Microseconds()), "proxy-µs/req")
				b.ReportMetric(float64((med[1] - med[0]).Microseconds()), "added-µs/req")
				b.ReportMetric(float64((cpu[1] - cpu[0]).Microseconds()), "added-cpu-µs/req")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// BenchmarkCopyStrategies is the measurement behind the tunnels' copy
// (copyBytes) and the client socket's send buffer (tuneClient): 100 MB
// from an origin through a bare forwarder to a client, all on loopback,
// with the forwarder copying through a 256 KiB buffer or splicing through
// a pipe, and the client socket's send buffer capped or autotuned. It
// reports the whole path's CPU (origin, forwarder, client: one process)
// and the throughput against the client reading straight from the origin.
//
//	go test -run '^$' -bench '^BenchmarkCopyStrategies$' -benchtime 1x ./internal/egress
func BenchmarkCopyStrategies(b *testing.B) {
	origin := sink(b)
	splice := func(dst, src *net.TCPConn, pipeSize int) {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
			b.Fatal(err)
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, pipeSize)
		rs, _ := src.SyscallConn()
		ws, _ := dst.SyscallConn()
		for {
			var n int64
			var err error
			rs.Read(func(fd uintptr) bool {
				n, err = unix.Splice(int(fd), nil, p[1], nil, pipeSize, unix.SPLICE_F_NONBLOCK)
				return err != unix.EAGAIN
			})
			if n <= 0 {
				return
			}
			for n > 0 {
				var m int64
				ws.Write(func(fd uintptr) bool {
					m, err = unix.Splice(p[0], nil, int(fd), nil, int(n), unix.SPLICE_F_NONBLOCK)
					return err != unix.EAGAIN
				})
				if err != nil {
					return
				}
				n -= m
			}
		}
	}
	for _, tc := range []struct {
		name   string
		capped bool
		pipe   int // 0: copy
	}{
		{"copy/capped", true, 0}, {"copy/autotuned", false, 0},
		{"splice-1MiB/capped", true, 1 << 20}, {"splice-64KiB/capped", true, 64 << 10},
		{"splice-1MiB/autotuned", false, 1 << 20},
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					up, err := net.Dial("tcp", origin.Addr().String())
					if err != nil {
						return
					}
					defer up.Close()
					if tc.capped {
						tuneClient(c)
					}
					go copyBytes(up, c)
					if tc.pipe == 0 {
						copyBytes(c, up)
					} else {
						splice(c.(*net.TCPConn), up.(*net.TCPConn), tc.pipe)
					}
					c.(*net.TCPConn).CloseWrite()
				}()
			}
		}()
		read := func(addr string) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "\x00go\n")
			if n, err := io.Copy(io.Discard, c); err != nil || n != transferSize {
				b.Fatalf("read %d bytes: %v", n, err)
			}
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				med, cpu, ratio := paired(b, 7, func() { read(origin.Addr().String()) }, func() { read(l.Addr().String()) })
				reportTransfer(b, med, cpu, ratio)
			}
		})
		l.Close()
	}
}
