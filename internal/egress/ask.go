package egress

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Question is what a person is asked about a host no rule names
// (unknown = "ask"): an approval request of the network group.
type Question struct {
	Host      string   `json:"host"` // canonical
	Port      int      `json:"port"`
	Workspace string   `json:"workspace,omitempty"`
	Session   string   `json:"session,omitempty"`
	Command   string   `json:"command,omitempty"` // when attributable
	Secrets   []string `json:"secrets,omitempty"` // brokered secrets this host would receive
}

// Answer is a person's decision.
type Answer struct {
	Allow bool
	// By names who decided, for the audit ("alice", "timeout").
	By string
	// Reason is a denial's reason; the jailed program sees it.
	Reason string
	// Remember is how long the answer holds for the same host and port
	// (0: only the connections waiting for it now).
	Remember time.Duration
}

// Asker reaches a person. The engine's approval broker implements it; the
// connection waits for Ask to return. An error (no channel can reach a
// person, the request timed out) refuses the connection with the error's
// text as the reason.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, q Question) (Answer, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, q Question) (Answer, error) { return f(ctx, q) }

// ErrNoAsker is the reason given when unknown = "ask" but nothing can ask.
var ErrNoAsker = errors.New(`unknown = "ask", but no approval channel can reach a person: refused`)

// asking coalesces questions: while one is open for a host and port, other
// connections to it wait for the same answer instead of asking again, and
// an answer with Remember is reused until it expires.
type asking struct {
	mu       sync.Mutex
	inflight map[string]*pending
	memo     map[string]memo
	now      func() time.Time
	base     context.Context // cancelled when the server closes
}

type pending struct {
	done chan struct{}
	ans  Answer
	err  error
}

type memo struct {
	ans     Answer
	expires time.Time
}

func (a *asking) ask(ctx context.Context, asker Asker, key string, q Question, timeout time.Duration) (Answer, bool, error) {
	a.mu.Lock()
	if a.inflight == nil {
		a.inflight, a.memo = map[string]*pending{}, map[string]memo{}
	}
	if m, ok := a.memo[key]; ok {
		if a.now().Before(m.expires) {
			a.mu.Unlock()
			return m.ans, true, nil
		}
		delete(a.memo, key)
	}
	p, ok := a.inflight[key]
	if !ok {
		p = &pending{done: make(chan struct{})}
		a.inflight[key] = p
		go a.run(asker, key, q, timeout, p)
	}
	a.mu.Unlock()
	select {
	case <-p.done:
		return p.ans, false, p.err
	case <-ctx.Done():
		return Answer{}, false, context.Cause(ctx)
	}
}

// run asks on a context of its own: the question outlives the connection
// that raised it, so that a client giving up does not cancel what a person
// is reading, and others waiting get the answer.
func (a *asking) run(asker Asker, key string, q Question, timeout time.Duration, p *pending) {
	ctx, cancel := context.WithTimeoutCause(a.base, timeout,
		errors.New("no answer from a person in time: refused"))
	defer cancel()
	if asker == nil {
		p.err = ErrNoAsker
	} else {
		p.ans, p.err = asker.Ask(ctx, q)
		if ctx.Err() != nil { // an answer after the deadline is no answer
			p.ans, p.err = Answer{}, context.Cause(ctx)
		}
	}
	a.mu.Lock()
	delete(a.inflight, key)
	if p.err == nil && p.ans.Remember > 0 {
		a.memo[key] = memo{p.ans, a.now().Add(p.ans.Remember)}
	}
	a.mu.Unlock()
	close(p.done)
}
