package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/sandbox/proto"
	"github.com/wardenhq/warden/internal/workspace"
)

// Manager keeps one worker per workspace: started on first use, reaped
// after its idle timeout, started again after a crash or a timed-out
// request. It is safe for concurrent use by many sessions.
type Manager struct {
	log      *slog.Logger
	backends map[string]Backend

	mu      sync.Mutex
	slots   map[string]*slot
	closed  bool
	stop    chan struct{}
	reaping sync.WaitGroup
}

type slot struct {
	mu     sync.Mutex // held while starting, so one start per workspace
	w      *Worker
	key    string // fingerprint of the options the worker was started with
	starts int
}

// reapInterval is how often idle workers are looked for.
const reapInterval = time.Second

// NewManager returns a Manager; logger may be nil.
func NewManager(logger *slog.Logger) *Manager { return newManager(logger, backends) }

// newManager returns a Manager whose workers start with the backends of bs.
func newManager(logger *slog.Logger, bs map[string]Backend) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{log: logger, backends: bs, slots: make(map[string]*slot), stop: make(chan struct{})}
	m.reaping.Add(1)
	go m.reap()
	return m
}

// Get returns the live worker of opts.Workspace, starting one if there is
// none, the last one died, or the options changed.
func (m *Manager) Get(ctx context.Context, opts *Options) (*Worker, error) {
	if opts == nil {
		return nil, errors.New("sandbox: Get needs options")
	}
	dir, err := filepath.Abs(opts.Workspace)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrManagerClosed
	}
	s := m.slots[dir]
	if s == nil {
		s = &slot{}
		m.slots[dir] = s
	}
	m.mu.Unlock()

	key := fingerprint(opts)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil && s.w.Alive() && s.key == key {
		s.w.touch()
		return s.w, nil
	}
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = m.log
	}
	w, err := start(ctx, &o, m.backends)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		w.Close()
		return nil, ErrManagerClosed
	}
	s.w, s.key = w, key
	s.starts++
	return w, nil
}

// FS returns a workspace.FS that sends every call to the workspace's
// current worker, starting or replacing it as needed.
func (m *Manager) FS(opts *Options) workspace.FS {
	return &FS{do: m.doer(opts), timeout: requestTimeout(opts)}
}

// Runner returns a command.Runner over the workspace's current worker.
func (m *Manager) Runner(opts *Options) command.Runner {
	return &Runner{do: m.doer(opts), allow: opts.EnvAllowlist}
}

func requestTimeout(o *Options) time.Duration {
	if o.RequestTimeout > 0 {
		return o.RequestTimeout
	}
	return 60 * time.Second
}

func (m *Manager) doer(opts *Options) doer {
	return func(ctx context.Context, req *proto.Request, timeout time.Duration) (*proto.Response, error) {
		w, err := m.Get(ctx, opts)
		if err != nil {
			return nil, err
		}
		resp, err := w.call(ctx, req, timeout)
		if errors.Is(err, errNotSent) {
			// The worker died between Get and the send (a reset by another
			// session): nothing ran, so a new worker may take the request.
			// A request that was sent is never sent again.
			if w, err = m.Get(ctx, opts); err != nil {
				return nil, err
			}
			return w.call(ctx, req, timeout)
		}
		return resp, err
	}
}

// List describes the running workers, sorted by workspace.
func (m *Manager) List() []Info {
	m.mu.Lock()
	slots := make([]*slot, 0, len(m.slots))
	for _, s := range m.slots {
		slots = append(slots, s)
	}
	m.mu.Unlock()
	var out []Info
	for _, s := range slots {
		s.mu.Lock()
		if s.w != nil && s.w.Alive() {
			out = append(out, s.w.Info())
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Workspace < out[j].Workspace })
	return out
}

func (m *Manager) reap() {
	defer m.reaping.Done()
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.mu.Lock()
		slots := make([]*slot, 0, len(m.slots))
		for _, s := range m.slots {
			slots = append(slots, s)
		}
		m.mu.Unlock()
		for _, s := range slots {
			if !s.mu.TryLock() {
				continue // starting
			}
			if w := s.w; w != nil && w.Alive() && w.idleFor() > w.settings.Idle {
				m.log.Info("sandbox worker idle; stopping it", "workspace", w.info.Workspace, "idle", w.settings.Idle)
				w.Close()
				s.w = nil
			}
			s.mu.Unlock()
		}
	}
}

// Close stops every worker.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	slots := m.slots
	m.mu.Unlock()
	m.reaping.Wait()
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.w != nil {
				s.w.Close()
				s.w = nil
			}
		}()
	}
	wg.Wait()
	return nil
}
