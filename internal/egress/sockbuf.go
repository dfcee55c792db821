package egress

import "net"

// clientSendBuffer is the send buffer (SO_SNDBUF; the kernel doubles it)
// of a client socket on loopback — every jailed command's socket, which
// the relay hands over from the jail's own loopback.
//
// Left to autotuning, the buffer grows to megabytes, and a download's
// bytes wait there long enough to leave the CPU caches before the client
// reads them: on kernel 6.18, 100 MB through a tunnel cost the whole path
// ~85 ms of CPU that way and ~60 ms with this cap (BenchmarkTransfer's
// proxy-cpu-ms). On loopback the round trip is microseconds, so 256 KiB
// in flight does not limit throughput; at 32 KiB (64 KiB doubled) the
// same transfer stalled, so the cap stays well above that.
const clientSendBuffer = 128 << 10

// tuneClient caps a loopback client socket's send buffer; other sockets
// (a client across a real network) keep the kernel's autotuning.
func tuneClient(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if a, ok := tc.RemoteAddr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		return
	}
	tc.SetWriteBuffer(clientSendBuffer)
}
