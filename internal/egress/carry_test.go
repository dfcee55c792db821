package egress

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress/relay"
)

// TestTunnelCarriesExactly attacks the carrying of checked tunnels with
// many at once, each writing in uneven pieces both ways: every byte
// arrives once, in order, on its own tunnel only, the end of either side
// is passed on, and the audit counts what was carried.

// stream is the deterministic content of one direction of one tunnel.
func stream(id uint64, dir byte, n int) []byte {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], id)
	seed[8] = dir
	b := make([]byte, n)
	rand.NewChaCha8(seed).Read(b)
	return b
}

// patternOrigin serves tunnels: it reads "\x00<id>\n", then at once sends
// down bytes of stream(id, 'd') and reads the client's bytes to its end,
// reporting them (with the id) on got.
type upload struct {
	id   uint64
	data []byte
}

func patternOrigin(t testing.TB, down int) (net.Listener, chan upload) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan upload, 64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				line, err := br.ReadString('\n')
				if err != nil || len(line) < 3 {
					return
				}
				id, err := strconv.ParseUint(line[1:len(line)-1], 10, 64)
				if err != nil {
					return
				}
				done := make(chan struct{})
				go func() {
					c.Write(stream(id, 'd', down))
					c.(*net.TCPConn).CloseWrite()
					close(done)
				}()
				data, _ := io.ReadAll(br)
				<-done
				got <- upload{id, data}
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l, got
}

// relayTunnel opens a CONNECT tunnel through the relay to host:port.
func relayTunnel(t testing.TB, relayAddr, host string, port int) (net.Conn, *bufio.Reader) {
	c, err := net.Dial("tcp", relayAddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n", host, port, host, port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT: %v", err)
	}
	if resp.StatusCode != 200 {
		c.Close()
		t.Fatalf("CONNECT: %s", resp.Status)
	}
	return c, br
}

func startRelayProxy(t testing.TB) (*proxy, string) {
	p := startProxy(t, baseFixture())
	r := &relay.Relay{Socket: p.socket}
	t.Cleanup(func() { r.Close() })
	addr, err := r.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return p, addr.String()
}

func TestTunnelCarriesExactly(t *testing.T) {
	const tunnels, up, down = 24, 3 << 20, 5 << 20
	origin, got := patternOrigin(t, down)
	port := origin.Addr().(*net.TCPAddr).Port
	p, relayAddr := startRelayProxy(t)
	var wg sync.WaitGroup
	errs := make(chan error, 2*tunnels)
	for i := range tunnels {
		wg.Go(func() {
			id := uint64(1000 + i)
			c, br := relayTunnel(t, relayAddr, "allowed.test", port)
			defer c.Close()
			// The download may end before the upload does: the
			// tunnel is closed only once both have.
			wrote := make(chan error, 1)
			defer func() {
				if err := <-wrote; err != nil {
					errs <- fmt.Errorf("tunnel %d: write: %v", id, err)
				}
			}()
			go func() {
				fmt.Fprintf(c, "\x00%d\n", id)
				data := stream(id, 'u', up)
				for len(data) > 0 {
					n := min(len(data), 1+rand.IntN(200<<10))
					if _, err := c.Write(data[:n]); err != nil {
						wrote <- err
						return
					}
					data = data[n:]
				}
				wrote <- c.(*net.TCPConn).CloseWrite()
			}()
			data, err := io.ReadAll(br)
			if err != nil {
				errs <- fmt.Errorf("tunnel %d: read: %v", id, err)
				return
			}
			if want := stream(id, 'd', down); !bytes.Equal(data, want) {
				errs <- fmt.Errorf("tunnel %d: the client got %d bytes, not the %d the server sent (first difference at %d)", id, len(data), len(want), firstDiff(data, want))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for range tunnels {
		select {
		case u := <-got:
			if want := stream(u.id, 'u', up); !bytes.Equal(u.data, want) {
				t.Errorf("tunnel %d: the server got %d bytes, not the %d the client sent (first difference at %d)", u.id, len(u.data), len(want), firstDiff(u.data, want))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("an upload never ended: the client's FIN was not passed on")
		}
	}
	for range tunnels {
		// The client's bytes include the "\x00<id>\n" line.
		if ev := p.ev.next(t); ev.BytesUp != up+6 || ev.BytesDown != down {
			t.Errorf("audited %d up, %d down; carried %d up, %d down", ev.BytesUp, ev.BytesDown, up+6, down)
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
