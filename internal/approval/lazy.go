package approval

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/wardenhq/warden/internal/store"
)

// Lazy is an Approver built on first use: a process that makes only calls
// no person needs to see (a hook answering an allowed call, `warden tool
// call read_file`) never opens channels or sweeps the store. make returns
// the approver and its release; an error it returns fails every use.
func Lazy(make func() (Approver, func(), error)) *LazyApprover {
	return &LazyApprover{make: make}
}

// LazyApprover is Lazy's Approver and Foreseer.
type LazyApprover struct {
	make    func() (Approver, func(), error)
	once    sync.Once
	a       Approver
	release func()
	err     error
	built   atomic.Bool
}

var (
	_ Approver = (*LazyApprover)(nil)
	_ Foreseer = (*LazyApprover)(nil)
)

func (l *LazyApprover) get() (Approver, error) {
	l.once.Do(func() {
		l.a, l.release, l.err = l.make()
		l.built.Store(true)
	})
	return l.a, l.err
}

// Ask implements Approver.
func (l *LazyApprover) Ask(ctx context.Context, req *Request) (Outcome, error) {
	a, err := l.get()
	if err != nil {
		return Outcome{State: store.Denied}, err
	}
	return a.Ask(ctx, req)
}

// Executed implements Approver.
func (l *LazyApprover) Executed(ctx context.Context, id string, success bool, result string) error {
	a, err := l.get()
	if err != nil {
		return err
	}
	return a.Executed(ctx, id, success, result)
}

// Foresee implements Foreseer, when the approver it builds does.
func (l *LazyApprover) Foresee(ctx context.Context, req *Request) (Foresight, error) {
	a, err := l.get()
	if err != nil {
		return Foresight{}, err
	}
	if f, ok := a.(Foreseer); ok {
		return f.Foresee(ctx, req)
	}
	return Foresight{}, nil
}

// Built reports whether the approver was built.
func (l *LazyApprover) Built() bool { return l.built.Load() }

// Close releases the approver, if it was built.
func (l *LazyApprover) Close() {
	if l.Built() && l.release != nil {
		l.release()
	}
}
