package approval

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/config"
)

// idChannel hands each new request's id to a supervisor goroutine.
type idChannel chan string

func (c idChannel) Notify(_ context.Context, p *Pending) error { c <- p.ID; return nil }

// benchAsk measures one supervised call from Ask to Executed on a SQLite
// file store (WAL), the way a `warden serve` process runs it.
func benchAsk(b *testing.B, br *Broker, req *Request) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := br.Ask(ctx, req)
		if err != nil || !out.Approved {
			b.Fatalf("%+v %v", out, err)
		}
		if err := br.Executed(ctx, out.ID, true, "ok"); err != nil {
			b.Fatal(err)
		}
	}
}

// An identical call under an active grant: no person asked.
func BenchmarkAskGranted(b *testing.B) {
	s := fileStore(b)
	ids := make(idChannel, 1)
	br := newBroker(b, s, func(o *Options) { o.Channels = []Channel{ids} })
	ch := ask(br, context.Background(), lsReq)
	if _, _, err := br.ApproveWithGrant(context.Background(), <-ids, "alice", "", time.Hour); err != nil {
		b.Fatal(err)
	}
	<-ch
	benchAsk(b, br, lsReq)
}

// A call an auto-approve rule matches.
func BenchmarkAskAutoApproved(b *testing.B) {
	s := fileStore(b)
	aa, err := CompileAutoApprove([]config.AutoApprove{{Tool: "run_command", CommandPattern: `^rm -rf build$`}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	br := newBroker(b, s, func(o *Options) { o.Auto = aa })
	benchAsk(b, br, lsReq)
}

// A call a supervisor approves through Decide as soon as it is notified:
// the floor of asking a person (store round trips, wake-up, claim).
func BenchmarkAskDecided(b *testing.B) {
	s := fileStore(b)
	ids := make(idChannel, 1)
	br := newBroker(b, s, func(o *Options) { o.Channels = []Channel{ids} })
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case id := <-ids:
				if _, err := br.Decide(context.Background(), id, "alice", true, ""); err != nil {
					panic(err)
				}
			case <-done:
				return
			}
		}
	}()
	benchAsk(b, br, &Request{Tool: "run_command", Args: json.RawMessage(`{"command":"make"}`), Workspace: "/w", Session: "bench"})
}
