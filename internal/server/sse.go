package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/internal/store"
)

// Event is one server-sent event of the stream: an approval request
// changed (approval.requested, approval.decided: Approval is set) or a
// grant did (grant.created, grant.used, grant.revoked, grant.expired:
// Grant is set). Approval events have the request's seq as SSE id, grant
// events "g" and the grant's seq.
type Event struct {
	Type     string          `json:"type"`
	Approval *store.Approval `json:"approval,omitempty"`
	Grant    *store.Grant    `json:"grant,omitempty"`
}

// hub reads the store's changes (made by any process) and fans them out to
// the connected streams. It also cancels, every sweep interval, the
// requests whose callers are gone (their lease ran out: a replica or a
// `warden tool call` that died), since no caller is left to do it.
type hub struct {
	st        store.Store
	view      *pendingView
	log       *slog.Logger
	heartbeat time.Duration
	sweep     time.Duration

	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	closed bool

	// feedMu serialises reads of the requests' change feed; after is the
	// last sequence read; readWrites is 1 + the store's LocalWrites noted
	// before the last read that reached the end of the feed (0: none yet).
	feedMu     sync.Mutex
	after      int64
	readWrites atomic.Uint64

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newHub(st store.Store, view *pendingView, head, ghead int64, poll, heartbeat, sweep time.Duration, log *slog.Logger) *hub {
	h := &hub{st: st, view: view, after: head, log: log, heartbeat: heartbeat, sweep: sweep, subs: map[chan []byte]struct{}{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go h.run(ghead, poll)
	return h
}

func (h *hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// readApprovals reads the requests' change feed after the last position
// read, hands each changed row to the pending view and the streams, in
// order, and reports whether more may be waiting. The hub's loop calls it
// at each wake-up (unless nil); a list calls it through catchUp, with
// unless its count of this process's writes: the read is skipped when one
// that began after that count was reached is already done.
func (h *hub) readApprovals(ctx context.Context, unless *uint64) (more bool, err error) {
	h.feedMu.Lock()
	defer h.feedMu.Unlock()
	if unless != nil && h.readWrites.Load() > *unless {
		return false, nil // read meanwhile by another caller
	}
	writes := h.localWrites()
	changes, err := h.st.Changes(ctx, h.after, 500)
	if err != nil {
		h.view.fed(h.after, false)
		return false, err
	}
	for _, a := range changes {
		h.view.apply(a)
		h.after = a.Seq
		ev := Event{Type: "approval.decided", Approval: a}
		if a.State == store.Pending {
			ev.Type = "approval.requested"
		}
		data, _ := json.Marshal(ev)
		h.broadcast([]byte(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", a.Seq, ev.Type, data)))
	}
	h.view.fed(h.after, true)
	if len(changes) == 500 {
		return true, nil
	}
	h.readWrites.Store(writes + 1)
	return false, nil
}

// localWrites is the store's count of this process's writes, when it
// keeps one (store.DB does).
func (h *hub) localWrites() uint64 {
	if lw, ok := h.st.(interface{ LocalWrites() uint64 }); ok {
		return lw.LocalWrites()
	}
	return 0
}

// catchUp makes sure the feed has been read to its end by a read that
// began after every write this process committed before the call: what
// this process wrote is then in the pending view. Reads that are done
// meanwhile by others count, so under a stream of writes a list waits for
// at most one read, not for the writes to stop.
func (h *hub) catchUp(ctx context.Context) {
	w0 := h.localWrites()
	for h.readWrites.Load() <= w0 {
		more, err := h.readApprovals(ctx, &w0)
		if err != nil || !more {
			return
		}
	}
}

func (h *hub) run(gafter int64, poll time.Duration) {
	defer close(h.done)
	// The store wakes the hub when anything changes, in any process
	// (LISTEN/NOTIFY on PostgreSQL); the ticker is a safety net.
	changed, unwatch := h.st.Watch("")
	defer unwatch()
	t := time.NewTicker(poll)
	defer t.Stop()
	sweep := time.NewTicker(h.sweep)
	defer sweep.Stop()
	// A write of this process wakes the hub through the store's
	// watcher, as any other process's does: no second wake-up (and read)
	// from the handler that wrote.
	for {
		tick := false
		select {
		case <-h.stop:
			return
		case <-t.C:
			tick = true
		case <-h.wake:
		case <-changed:
		case <-sweep.C:
			h.sweepOrphans()
			continue
		}
		ctx := context.Background()
		more, err := h.readApprovals(ctx, nil)
		if err != nil {
			h.log.Warn("event stream: failed to read changes", "err", err)
			continue
		}
		// Expiry happens by the clock: record it, at each tick of the
		// poll (not at every change, which does not bring it closer), so
		// the stream (and the audit chain) say when a grant stopped
		// applying.
		if tick {
			if _, err := h.st.ExpireGrants(ctx); err != nil {
				h.log.Warn("event stream: failed to record expired grants", "err", err)
			}
		}
		grants, err := h.st.GrantChanges(ctx, gafter, 500)
		if err != nil {
			h.log.Warn("event stream: failed to read grant changes", "err", err)
			continue
		}
		for _, g := range grants {
			gafter = g.Seq
			ev := Event{Type: "grant." + g.LastEvent, Grant: g}
			data, _ := json.Marshal(ev)
			h.broadcast([]byte(fmt.Sprintf("id: g%d\nevent: %s\ndata: %s\n\n", g.Seq, ev.Type, data)))
		}
		if more || len(grants) == 500 {
			h.poke()
		}
	}
}

// sweepOrphans cancels the requests of callers that are gone.
func (h *hub) sweepOrphans() {
	swept, err := h.st.SweepOrphans(context.Background(), store.Alive)
	if err != nil {
		h.log.Warn("failed to cancel orphaned approval requests", "err", err)
	}
	for _, a := range swept {
		h.log.Warn("cancelled an approval request whose caller is gone", "id", a.ID, "tool", a.Tool,
			"host", a.Owner.Host, "pid", a.Owner.PID)
	}
}

func (h *hub) broadcast(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- msg:
		default: // a client too slow to keep up is dropped; it can reconnect
			delete(h.subs, ch)
			close(ch)
		}
	}
}

func (h *hub) subscribe() (chan []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	ch := make(chan []byte, 256)
	h.subs[ch] = struct{}{}
	return ch, true
}

func (h *hub) unsubscribe(ch chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	for ch := range h.subs {
		delete(h.subs, ch)
		close(ch)
	}
	h.mu.Unlock()
	close(h.stop)
	<-h.done
}

func (h *hub) serve(w http.ResponseWriter, r *http.Request, _ string) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	ch, ok := h.subscribe()
	if !ok {
		writeErr(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	defer h.unsubscribe(ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": warden approvals stream\n\n")
	fl.Flush()
	beat := time.NewTicker(h.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			if _, err := w.Write(msg); err != nil {
				return
			}
			fl.Flush()
		case <-beat.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
