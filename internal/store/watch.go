package store

import (
	"context"
	"sync"
	"time"
)

// watcher wakes the callers of Watch. One goroutine per store reads the
// changes after the last one it saw and signals the watchers of each
// changed request, and those of every change. It reads when this process
// committed a write, when another process announced one (PostgreSQL's
// LISTEN, see listen), and every poll interval: on SQLite that interval is
// how other processes' changes are seen; on PostgreSQL it is a safety net
// for a notification lost with a connection.
type watcher struct {
	s    *DB
	poll time.Duration
	// listen, when set, runs until ctx ends, calling wake for every change
	// another process announces.
	listen func(ctx context.Context, wake func())

	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	started bool
	closed  bool

	kicks  chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

func newWatcher(s *DB, poll time.Duration, listen func(ctx context.Context, wake func())) *watcher {
	return &watcher{s: s, poll: poll, listen: listen, subs: map[string]map[chan struct{}]struct{}{},
		kicks: make(chan struct{}, 1), done: make(chan struct{})}
}

// Watch implements Store.
func (s *DB) Watch(id string) (<-chan struct{}, func()) {
	return s.watch.add(id)
}

func (w *watcher) add(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		close(ch)
		return ch, func() {}
	}
	if w.subs[id] == nil {
		w.subs[id] = map[chan struct{}]struct{}{}
	}
	w.subs[id][ch] = struct{}{}
	if !w.started {
		// The starting position is read before Watch returns: a change
		// committed after it is signalled even if the reader goroutine
		// has not run yet.
		w.started = true
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		after, _ := w.s.ChangeHead(ctx)
		gafter, _ := w.s.GrantHead(ctx)
		go w.run(ctx, after, gafter)
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.subs[id], ch)
			if len(w.subs[id]) == 0 {
				delete(w.subs, id)
			}
		})
	}
}

// kick asks for a read of the changes now (a write of this process
// committed, or another process announced one).
func (w *watcher) kick() {
	if w == nil {
		return
	}
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

func (w *watcher) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	started := w.started
	for _, set := range w.subs {
		for ch := range set {
			close(ch)
		}
	}
	w.subs = map[string]map[chan struct{}]struct{}{}
	w.mu.Unlock()
	if started {
		w.cancel()
		<-w.done
	}
}

func (w *watcher) run(ctx context.Context, after, gafter int64) {
	defer close(w.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	if w.listen != nil {
		wg.Go(func() { w.listen(ctx, w.kick) })
	}
	t := time.NewTicker(w.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kicks:
		case <-t.C:
		}
		after, gafter = w.read(ctx, after, gafter)
	}
}

// read signals the watchers of what changed after seq after (requests)
// and gafter (grants), and returns the new positions.
func (w *watcher) read(ctx context.Context, after, gafter int64) (int64, int64) {
	const page = 500
	changed := map[string]bool{}
	moved := false
	for {
		list, err := w.s.Changes(ctx, after, page)
		if err != nil {
			break // read again at the next kick or tick
		}
		for _, a := range list {
			after = a.Seq
			changed[a.ID] = true
		}
		moved = moved || len(list) > 0
		if len(list) < page {
			break
		}
	}
	for {
		list, err := w.s.GrantChanges(ctx, gafter, page)
		if err != nil {
			break
		}
		for _, g := range list {
			gafter = g.Seq
		}
		moved = moved || len(list) > 0
		if len(list) < page {
			break
		}
	}
	if !moved {
		return after, gafter
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range changed {
		signal(w.subs[id])
	}
	signal(w.subs[""])
	return after, gafter
}

func signal(set map[chan struct{}]struct{}) {
	for ch := range set {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
