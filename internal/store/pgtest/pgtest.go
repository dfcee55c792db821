// Package pgtest gives tests a real PostgreSQL database.
//
// When WARDEN_TEST_POSTGRES_URL names a server (scripts/postgres sets it:
// an administrator's URL, e.g. postgres://postgres@127.0.0.1:PORT/postgres),
// tests use that server. Otherwise the first test that asks starts one for
// the test process: initdb and postgres from Debian's postgresql package,
// as the user nobody when the tests run as root (PostgreSQL refuses to run
// as root), listening on 127.0.0.1 and a free port only, with a random
// password, its data in a temporary directory, and durability off
// (fsync=off: a crash loses nothing the tests need). The server dies with the test process (parent-death
// signal) and Stop, called from TestMain, removes its directory; a directory
// left by a process killed before Stop is removed by the next start.
//
// Each URL call creates a fresh database, dropped when the test ends. A
// machine without PostgreSQL skips the test, or fails it under
// WARDEN_REQUIRE_SANDBOX=1 (internal/testenv).
//
// Only tests import this package.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/internal/testenv"
)

// EnvURL is the variable that names a running server to use.
const EnvURL = "WARDEN_TEST_POSTGRES_URL"

var server struct {
	once sync.Once
	url  string // administrator's URL
	err  error
	dir  string
	proc *os.Process
	skip string // why no server could be had (a missing program)
}

// URL returns the URL of a new, empty database for t, dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	name := "warden_test_" + randHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL", EnvURL)
	}
	u.Path = "/" + name
	return u.String()
}

// AdminURL returns the URL of the test server's administrator database,
// starting the server if needed.
func AdminURL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	server.once.Do(start)
	if server.skip != "" {
		testenv.Skip(t, "%s", server.skip)
	}
	if server.err != nil {
		t.Fatalf("pgtest: start PostgreSQL: %v", server.err)
	}
	return server.url
}

// Stop stops the server this process started, if any, and removes its
// directory. TestMain calls it after the tests ran.
func Stop() {
	if server.proc == nil {
		return
	}
	server.proc.Signal(syscall.SIGINT) // fast shutdown
	done := make(chan struct{})
	go func() { server.proc.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		server.proc.Kill()
		<-done
	}
	os.RemoveAll(server.dir)
	server.proc = nil
}

// ownerFile holds the pid of the test process that owns a server directory.
const ownerFile = "owner.pid"

func start() {
	for _, prog := range []string{"initdb", "pg_ctl", "postgres"} {
		if testenv.Look(prog) == "" {
			server.skip = prog + " is not installed (apt-get install postgresql)"
			return
		}
	}
	removeStale()
	server.err = startServer()
}

// removeStale removes server directories whose test process is gone.
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "warden-pgtest-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

func startServer() error {
	dir, err := os.MkdirTemp("", "warden-pgtest-")
	if err != nil {
		return err
	}
	server.dir = dir
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return err
	}
	cred, err := runAs(dir, data)
	if err != nil {
		return err
	}
	// Password authentication, even on loopback: other local users must
	// not reach the test server, and the tests then run the password path.
	password := randHex(16)
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(pwfile, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	initdb := exec.Command(testenv.Look("initdb"), "-D", data, "-A", "scram-sha-256", "-U", "postgres", "--pwfile", pwfile,
		"-E", "UTF8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	os.Remove(pwfile)
	port, err := freePort()
	if err != nil {
		return err
	}
	// Started here (not by pg_ctl) so the server is this process's child
	// and gets SIGQUIT (immediate shutdown) when the test process dies.
	// The parent-death signal is tied to the thread that starts the child:
	// that thread stays locked until the server exits.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(testenv.Look("postgres"), "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1",
			"-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=400", "-c", "shared_buffers=64MB")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
		cmd.Dir = dir
		log, err := os.Create(filepath.Join(dir, "postgres.log"))
		if err != nil {
			started <- err
			return
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		server.proc = cmd.Process
		started <- nil
		cmd.Wait() // keeps this thread until the server exits
		log.Close()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	server.url = fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable", password, port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, server.url)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			return fmt.Errorf("postgres did not accept connections on port %d: %v\n%s", port, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runAs returns the credentials to run PostgreSQL with (nobody, when this
// process is root: PostgreSQL refuses to run as root) after giving that
// user the server's directories.
func runAs(dirs ...string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	const nobody = 65534
	for _, d := range dirs {
		if err := os.Chown(d, nobody, nobody); err != nil {
			return nil, err
		}
	}
	return &syscall.Credential{Uid: nobody, Gid: nobody}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
