package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultLeaseTTL is how long a lease lasts without a renewal: the longest
// a request of a process that died or was cut off stays open before any
// sweeper may cancel it.
const DefaultLeaseTTL = 15 * time.Second

// leaseRetention is how long an expired lease row is kept (for `warden
// approvals show` to explain a cancellation) before SweepOrphans deletes it.
const leaseRetention = time.Hour

// ErrLeaseLost means a lease expired (or was released) before its renewal:
// the holder must stop acting on the requests it owns.
var ErrLeaseLost = errors.New("the lease expired before it was renewed")

// Lease is a process's claim to be alive, renewed while it waits for
// decisions. Requests name it (Owner.Lease).
type Lease struct {
	ID        string    `json:"id"`
	Owner     Owner     `json:"owner"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Leases is the part of Store that keeps callers' leases.
type Leases interface {
	// AcquireLease records a new lease for o, valid for ttl from the
	// store's now.
	AcquireLease(ctx context.Context, o Owner, ttl time.Duration) (*Lease, error)
	// RenewLease extends lease id to ttl from the store's now. A lease
	// that already expired is never revived: ErrLeaseLost.
	RenewLease(ctx context.Context, id string, ttl time.Duration) (*Lease, error)
	// ReleaseLease ends lease id now; SweepOrphans then cancels the
	// requests it still owns.
	ReleaseLease(ctx context.Context, id string) error
}

func newLeaseID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand failed: " + err.Error()) // rand.Read does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}

// AcquireLease implements Leases.
func (s *DB) AcquireLease(ctx context.Context, o Owner, ttl time.Duration) (*Lease, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("failed to acquire a lease: the lease period must be positive, not %s", ttl)
	}
	l := &Lease{ID: newLeaseID(), Owner: o}
	l.Owner.Lease = l.ID
	err := s.inTxOpts(ctx, "acquire a lease", txOpts{light: true}, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		l.ExpiresAt = now.Add(ttl).UTC()
		_, err := s.exec(ctx, tx, `INSERT INTO leases (lease_id, host, pid, start, acquired_at, renewed_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, l.ID, o.Host, o.PID, o.Start, now.UnixMilli(), now.UnixMilli(), l.ExpiresAt.UnixMilli())
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// RenewLease implements Leases.
func (s *DB) RenewLease(ctx context.Context, id string, ttl time.Duration) (*Lease, error) {
	var l *Lease
	err := s.inTxOpts(ctx, "renew lease "+id, txOpts{light: true}, func(ctx context.Context, tx *sql.Tx) error {
		now := s.now()
		res, err := s.exec(ctx, tx, `UPDATE leases SET renewed_at = ?, expires_at = ? WHERE lease_id = ? AND expires_at > ?`,
			now.UnixMilli(), now.Add(ttl).UnixMilli(), id, now.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("lease %s: %w", id, ErrLeaseLost)
		}
		l = &Lease{ID: id}
		var exp int64
		err = s.queryRow(ctx, tx, "SELECT host, pid, start, expires_at FROM leases WHERE lease_id = ?", id).
			Scan(&l.Owner.Host, &l.Owner.PID, &l.Owner.Start, &exp)
		l.Owner.Lease, l.ExpiresAt = id, time.UnixMilli(exp).UTC()
		return err
	})
	return l, err
}

// ReleaseLease implements Leases.
func (s *DB) ReleaseLease(ctx context.Context, id string) error {
	return s.inTxOpts(ctx, "release lease "+id, txOpts{light: true}, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, "UPDATE leases SET expires_at = ? WHERE lease_id = ? AND expires_at > ?",
			s.now().UnixMilli(), id, s.now().UnixMilli())
		return err
	})
}

// LeaseKeeper holds a lease for this process and renews it in the
// background, every third of its period.
type LeaseKeeper struct {
	st    Leases
	lease *Lease
	ttl   time.Duration

	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	closing  sync.Once
}

// KeepLease acquires a lease for o on st and starts renewing it. Close
// stops renewing and releases it.
func KeepLease(ctx context.Context, st Leases, o Owner, ttl time.Duration) (*LeaseKeeper, error) {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	l, err := st.AcquireLease(ctx, o, ttl)
	if err != nil {
		return nil, err
	}
	k := &LeaseKeeper{st: st, lease: l, ttl: ttl, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go k.run()
	return k, nil
}

// Owner is o with the lease's id: what requests of this process carry.
func (k *LeaseKeeper) Owner() Owner { return k.lease.Owner }

// TTL is the lease period.
func (k *LeaseKeeper) TTL() time.Duration { return k.ttl }

// Lost is closed when the lease could not be renewed in time: the
// requests of this process are (or soon will be) cancelled, and it must
// not run any of them.
func (k *LeaseKeeper) Lost() <-chan struct{} { return k.lost }

func (k *LeaseKeeper) run() {
	defer close(k.done)
	every := k.ttl / 3
	t := time.NewTicker(every)
	defer t.Stop()
	// expiry fires when the lease runs out as far as this process knows
	// (its period after the last renewal that succeeded was sent): the
	// holder hears of the loss no later than the store enforces it.
	expiry := time.NewTimer(k.ttl)
	defer expiry.Stop()
	lose := func() { k.lostOnce.Do(func() { close(k.lost) }) }
	for {
		select {
		case <-k.stop:
			return
		case <-expiry.C:
			lose()
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		sent := time.Now()
		_, err := k.st.RenewLease(ctx, k.lease.ID, k.ttl)
		cancel()
		switch {
		case err == nil:
			expiry.Reset(time.Until(sent.Add(k.ttl)))
		case errors.Is(err, ErrLeaseLost):
			lose()
			return
		}
	}
}

// Close stops the renewals and releases the lease.
func (k *LeaseKeeper) Close() error {
	var err error
	k.closing.Do(func() {
		close(k.stop)
		<-k.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = k.st.ReleaseLease(ctx, k.lease.ID)
	})
	return err
}
