package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress/relay"
)

// askFixture lets unknown.test be asked about; the asker decides.
func askFixture(asker Asker) fixture {
	f := baseFixture()
	f.unknown = "ask"
	f.asker = asker
	return f
}

func TestAsk(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	port := strconv.Itoa(int(up.port()))
	url := "http://unknown.test:" + port + "/"

	t.Run("a person allows", func(t *testing.T) {
		var got Question
		f := askFixture(AskerFunc(func(ctx context.Context, q Question) (Answer, error) {
			got = q
			return Answer{Allow: true, By: "alice"}, nil
		}))
		f.opts = func(o *Options) {
			o.Attribute = func(ConnInfo) Attribution { return Attribution{Session: "s1", Command: "curl"} }
		}
		p := startProxy(t, f)
		// unknown.test resolves to loopback, which a person's yes does not
		// unlock: the answer is allow, the address is still refused.
		code, body := get(t, p.client(p.addr), url)
		must(t, code == 403 && contains(body, "loopback"), "got %d %q", code, body)
		must(t, got.Host == "unknown.test" && got.Port == int(up.port()) && got.Workspace == "/ws" && got.Session == "s1" && got.Command == "curl",
			"question %+v", got)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.Rule == `unknown = "ask"` && contains(ev.Reason, "resolves only to refused"), "event %+v", ev)
	})
	t.Run("a person denies, with a reason", func(t *testing.T) {
		p := startProxy(t, askFixture(AskerFunc(func(ctx context.Context, q Question) (Answer, error) {
			return Answer{Allow: false, By: "bob", Reason: "not for this task"}, nil
		})))
		code, body := get(t, p.client(p.addr), url)
		must(t, code == 403 && contains(body, "not for this task") && contains(body, "bob"), "got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.DecidedBy == "bob", "event %+v", ev)
	})
	t.Run("nobody answers in time", func(t *testing.T) {
		f := askFixture(AskerFunc(func(ctx context.Context, q Question) (Answer, error) {
			<-ctx.Done()
			return Answer{}, ctx.Err()
		}))
		f.opts = func(o *Options) { o.AskTimeout = 200 * time.Millisecond }
		p := startProxy(t, f)
		code, body := get(t, p.client(p.addr), url)
		must(t, code == 403 && contains(body, "no answer from a person in time"), "got %d %q", code, body)
		ev := p.ev.next(t)
		must(t, ev.Decision == "deny" && ev.DecidedBy == "nobody", "event %+v", ev)
	})
	t.Run("no way to reach a person", func(t *testing.T) {
		p := startProxy(t, askFixture(nil))
		code, body := get(t, p.client(p.addr), url)
		must(t, code == 403 && contains(body, "no approval channel"), "got %d %q", code, body)
		p.ev.next(t)
	})
	t.Run("the broker fails", func(t *testing.T) {
		p := startProxy(t, askFixture(AskerFunc(func(ctx context.Context, q Question) (Answer, error) {
			return Answer{}, errors.New("store unavailable")
		})))
		code, body := get(t, p.client(p.addr), url)
		must(t, code == 403 && contains(body, "store unavailable"), "got %d %q", code, body)
		p.ev.next(t)
	})
}

// Concurrent connections to one host wait for one question; a remembered
// answer is reused until it expires.
func TestAskCoalesces(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err == nil, "%v", err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var asked atomic.Int32
	release := make(chan struct{})
	f := askFixture(AskerFunc(func(ctx context.Context, q Question) (Answer, error) {
		asked.Add(1)
		<-release
		return Answer{Allow: true, By: "alice", Remember: time.Hour}, nil
	}))
	// 127.0.0.3 is loopback; name it so a yes can reach it (the address
	// rule makes it explicit, the name is still unknown and asked about).
	f.allow = append(f.allow, "127.0.0.3")
	f.names["asked.test"] = []netip.Addr{netip.MustParseAddr("127.0.0.3")}
	p := startProxy(t, f)
	lport := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l3, err := net.Listen("tcp", "127.0.0.3:"+lport)
	if err != nil {
		t.Skipf("127.0.0.3: %v", err)
	}
	defer l3.Close()
	go func() {
		for {
			c, err := l3.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hi")
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	results := make(chan string, 5)
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, why := p.connect(t, "asked.test:"+lport)
			if c == nil {
				results <- why
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			results <- string(b)
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		must(t, r == "hi", "a waiting connection got %q", r)
	}
	must(t, asked.Load() == 1, "asked %d times for one host", asked.Load())
	c, why := p.connect(t, "asked.test:"+lport)
	must(t, c != nil, "remembered answer not used: %s", why)
	c.Close()
	must(t, asked.Load() == 1, "asked again within Remember")
	for range 6 {
		ev := p.ev.next(t)
		must(t, ev.Decision == "allow" && ev.DecidedBy == "alice", "event %+v", ev)
	}
}

// The relay hands connections from the jail's loopback to the server's
// unix socket; the server learns the ports from the socket and attributes
// by them.
func TestRelay(t *testing.T) {
	t.Parallel()
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	var seen atomic.Value
	f := baseFixture()
	f.opts = func(o *Options) {
		o.Attribute = func(ci ConnInfo) Attribution {
			seen.Store(ci)
			return Attribution{Command: "client-port-" + strconv.Itoa(int(ci.ClientPort))}
		}
	}
	p := startProxy(t, f)
	r := &relay.Relay{Socket: p.socket}
	defer r.Close()
	addr, err := r.Listen("127.0.0.1:0")
	must(t, err == nil, "%v", err)
	code, body := get(t, p.client(addr.String()), "http://allowed.test:"+strconv.Itoa(int(up.port()))+"/")
	must(t, code == 200 && contains(body, "host=allowed.test"), "got %d %q", code, body)
	ci := seen.Load().(ConnInfo)
	must(t, ci.Relayed && ci.ListenerPort == uint16(addr.(*net.TCPAddr).Port) && ci.ClientPort != 0, "conn info %+v", ci)
	ev := p.ev.next(t)
	must(t, ev.Decision == "allow" && ev.Command == "client-port-"+strconv.Itoa(int(ci.ClientPort)), "event %+v", ev)

	t.Run("bytes instead of a socket", func(t *testing.T) {
		c, err := net.Dial("unix", p.socket)
		must(t, err == nil, "%v", err)
		defer c.Close()
		io.WriteString(c, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		must(t, len(b) == 0, "a connection without a socket got %q", b)
	})
}
