package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// ErrBadURL means a PostgreSQL connection string could not be parsed. The
// error never quotes the string, which may hold a password.
var ErrBadURL = errors.New("not a valid PostgreSQL connection URL")

// OpenPostgres connects to the PostgreSQL database url (a postgres:// URL
// or a key=value connection string) and brings its schema up to date,
// holding an advisory lock so that replicas starting at once migrate it
// once. Errors name the host and database, never the password.
func OpenPostgres(ctx context.Context, url string, opts *Options) (*DB, error) {
	opts = opts.orDefault()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx redacts passwords from parse errors only on a best-effort
		// basis, so its message is not repeated.
		return nil, fmt.Errorf("failed to open the store: %w", ErrBadURL)
	}
	cfg.MaxConns = 16
	if opts.MaxConns > 0 {
		cfg.MaxConns = int32(opts.MaxConns)
	}
	where := describePG(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to open the store %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("failed to connect to the store %s: %w", where, err)
	}
	db := stdlib.OpenDBFromPool(pool)
	db.SetMaxOpenConns(int(cfg.MaxConns))
	s := &DB{db: db, pool: pool, where: where, backend: BackendPostgres, writer: make(chan struct{}, 1)}
	s.now = opts.Now
	if s.now == nil {
		offset, err := serverClockOffset(ctx, pool)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("failed to read the clock of the store %s: %w", where, err)
		}
		s.now = func() time.Time { return time.Now().Add(offset) }
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	s.watch = newWatcher(s, poll, func(ctx context.Context, wake func()) { listen(ctx, cfg.ConnConfig, wake) })
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// describePG names a database for errors and logs: user, host, port and
// database, never the password.
func describePG(c *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Database)
}

// serverClockOffset is how far the database server's clock is ahead of
// this host's, measured over one round trip. Every replica judges expiry
// and leases by the server's clock, so hosts whose clocks disagree still
// agree on when a request expired.
func serverClockOffset(ctx context.Context, pool *pgxpool.Pool) (time.Duration, error) {
	best, offset := time.Duration(-1), time.Duration(0)
	for range 3 {
		var ms int64
		t0 := time.Now()
		if err := pool.QueryRow(ctx, "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint").Scan(&ms); err != nil {
			return 0, err
		}
		rtt := time.Since(t0)
		if best < 0 || rtt < best {
			mid := t0.Add(rtt / 2)
			best, offset = rtt, time.UnixMilli(ms).Sub(mid)
		}
	}
	return offset, nil
}

// listen holds its own connection (not one of the pool's) that LISTENs on
// notifyChannel and calls wake for each notification, until ctx ends. A
// lost connection is reopened; wake is called after each (re)connection,
// since notifications sent meanwhile were lost.
func listen(ctx context.Context, cfg *pgx.ConnConfig, wake func()) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+notifyChannel); err == nil {
				backoff = 100 * time.Millisecond
				wake()
				for err == nil {
					_, err = conn.WaitForNotification(ctx)
					if err == nil {
						wake()
					}
				}
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Close(closeCtx)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
