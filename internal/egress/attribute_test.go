package egress

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/egress/relay"
	"github.com/wardenhq/warden/internal/testenv"
)

// A connection a program opens through the relay is attributed to that
// program's command line.
func TestProcAttributor(t *testing.T) {
	t.Parallel()
	curl := testenv.Need(t, "curl")[0]
	up := startOrigin(t, "tcp", "127.0.0.1:0")
	f := baseFixture()
	f.opts = func(o *Options) {
		attr := ProcAttributor(func() []int { return Descendants(os.Getpid()) }) // the test shares the relay's namespace
		o.Attribute = func(ci ConnInfo) Attribution { return Attribution{Command: attr(ci)} }
	}
	p := startProxy(t, f)
	r := &relay.Relay{Socket: p.socket}
	defer r.Close()
	addr, err := r.Listen("127.0.0.1:0")
	must(t, err == nil, "%v", err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// The connection lasts a while (the lookup runs beside it; a
	// connection that ends within a millisecond may not be attributed).
	url := "http://allowed.test:" + strconv.Itoa(int(up.port())) + "/slow"
	out, err := exec.CommandContext(ctx, curl, "-sS", "--noproxy", "", "-x", "http://"+addr.String(), url).CombinedOutput()
	must(t, err == nil, "curl: %v %s", err, out)
	ev := p.ev.next(t)
	must(t, strings.HasPrefix(ev.Command, curl) && strings.Contains(ev.Command, url), "event command %q", ev.Command)
}

func TestProcAttributorUnknown(t *testing.T) {
	t.Parallel()
	attr := ProcAttributor(func() []int { return Descendants(os.Getpid()) })
	if got := attr(ConnInfo{Relayed: true, ClientPort: 1, ListenerPort: 2}); got != "" {
		t.Errorf("attributed a connection that does not exist to %q", got)
	}
	if got := attr(ConnInfo{}); got != "" {
		t.Errorf("attributed an unrelayed connection to %q", got)
	}
}
