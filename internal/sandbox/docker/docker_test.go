package docker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/docker"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/sandbox/sandboxtest"
)

// TestDocker runs the backend suite, then what only the docker backend
// has, against a real dockerd the test starts.
func TestDocker(t *testing.T) {
	d := startTestDockerd(t)
	t.Run("conformance", func(t *testing.T) { sandboxtest.Run(t, d.fixture()) })

	t.Run("probe", func(t *testing.T) {
		t.Setenv("DOCKER_HOST", d.host)
		if got := docker.Probe(context.Background()); !strings.HasPrefix(got, "ok: server ") {
			t.Errorf("probe: %q", got)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		ws := d.workspace(t, nil)
		rootWS := t.TempDir()
		for _, tc := range []struct {
			name, ws, image string
			want            error
			hint            string
		}{
			{"image missing", ws, "warden-test:absent", sandbox.ErrBackendUnavailable, "docker pull"},
			{"root-owned workspace", rootWS, d.image, nil, "chown"},
			{"no C library in the image", ws, d.bare, nil, "glibc"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: tc.ws, HostEnv: d.env, StartTimeout: time.Minute,
					Sandbox: &config.Sandbox{Enabled: true, Backend: jail.BackendDocker, DockerImage: tc.image}})
				if err == nil {
					w.Close()
					t.Fatal("started")
				}
				if tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("got %v, want %v", err, tc.want)
				}
				var h interface{ Hint() string }
				if !errors.As(err, &h) || !strings.Contains(h.Hint(), tc.hint) {
					t.Errorf("error %v: want a hint mentioning %q", err, tc.hint)
				}
				if n := d.containers(t, tc.ws); len(n) != 0 {
					t.Errorf("containers left behind: %v", n)
				}
			})
		}
	})
	// An image without bash runs argv commands and refuses command lines,
	// saying why: a line judged as bash never runs under the image's sh.
	t.Run("no bash in the image", func(t *testing.T) {
		sb := d.sandbox()
		sb.DockerImage = d.noBash
		w, dir := d.start(t, sb, nil)
		if res, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"true"}, Timeout: 20 * time.Second}); err != nil || res.ExitCode != 0 {
			t.Fatalf("argv without bash: %+v %v", res, err)
		}
		_, err := w.Runner().Run(context.Background(), command.Spec{Shell: "touch ran", Timeout: 20 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "bash is not installed") || !strings.Contains(err.Error(), "never with sh") {
			t.Errorf("a command line without bash: %v", err)
		}
		if _, err := os.Stat(dir + "/ran"); err == nil {
			t.Error("the line ran without bash")
		}
	})

	t.Run("container", func(t *testing.T) {
		w, dir := d.start(t, nil, nil)
		names := d.containers(t, dir)
		if len(names) != 1 {
			t.Fatalf("containers: %v", names)
		}
		name := names[0]
		if info := w.Info(); !strings.Contains(info.Detail, name) || info.PidsMax != jail.PidsMax || info.Network {
			t.Errorf("Info: %+v", info)
		}
		hostConf, err := d.run(30*time.Second, "inspect", "--format",
			"{{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.HostConfig.Init}} {{.Config.User}}", name)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("none true [ALL] %d %d true %d:%d", docker.DefaultMemoryMB<<20, jail.PidsMax, testUID, testGID); hostConf != want {
			t.Errorf("container config: %q, want %q", hostConf, want)
		}
		res, err := w.Runner().Run(context.Background(), command.Spec{Shell: "id -u; id -g; grep CapBnd /proc/self/status", Timeout: 20 * time.Second})
		if want := fmt.Sprintf("%d\n%d\nCapBnd:\t0000000000000000\n", testUID, testGID); err != nil || res.Output != want {
			t.Errorf("user and bounding set: %q %v, want %q", res.Output, err, want)
		}
		// Close removes the container.
		w.Close()
		if got := d.containers(t, dir); len(got) != 0 {
			t.Errorf("containers after Close: %v", got)
		}
	})

	// Mount values are CSV: names holding commas, quotes, '=' or newlines
	// are masked as written; one holding CR LF (which the docker client
	// reads back as LF) must not leave the file readable.
	t.Run("mask names", func(t *testing.T) {
		names := []string{".env.a,b", ".env.\"q\"", ".env.x=y,readonly=false", ".env. lead", ".env.nl\nx", ".env.lonecr\rx"}
		files := map[string]string{}
		for _, n := range append(names, ".env.cr\r\nx") {
			files[n] = "SECRET=hunter2\n"
		}
		dir := d.workspace(t, files)
		w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: dir, HostEnv: d.env, StartTimeout: time.Minute, Sandbox: d.sandbox()})
		if err == nil {
			defer w.Close()
			res, _ := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"cat", ".env.cr\r\nx"}, Timeout: 20 * time.Second})
			t.Fatalf("started with a mask docker cannot name; cat read %q", res.Output)
		}
		if !strings.Contains(err.Error(), "--mount") {
			t.Errorf("the error does not say why: %v", err)
		}
		if n := d.containers(t, dir); len(n) != 0 {
			t.Errorf("containers left behind: %v", n)
		}
		delete(files, ".env.cr\r\nx")
		w, _ = d.start(t, nil, files)
		for _, n := range names {
			res, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{"cat", n}, Timeout: 20 * time.Second})
			if err != nil || strings.Contains(res.Output, "hunter2") {
				t.Errorf("cat %q: %q, %v", n, res.Output, err)
			}
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		sb := d.sandbox()
		sb.MemoryMB = 96
		w, _ := d.start(t, sb, nil)
		alloc := func(mib string) command.Result {
			res, err := w.Runner().Run(context.Background(), command.Spec{Argv: []string{jail.JailExe, "sandboxtest-probe", "alloc", mib}, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if res := alloc("16"); strings.TrimSpace(res.Output) != "allocated 16 MiB" {
			t.Fatalf("a small allocation failed: %q (exit %d)", res.Output, res.ExitCode)
		}
		res := alloc("400")
		if res.ExitCode == 0 || strings.Contains(res.Output, "allocated") {
			t.Errorf("allocated 400 MiB under memory_mb = 96: %q (exit %d)", res.Output, res.ExitCode)
		}
		t.Logf("400 MiB under a 96 MiB limit: exit %d", res.ExitCode)
		if _, err := w.Ping(context.Background()); err != nil {
			t.Errorf("the worker did not survive its command's OOM kill: %v", err)
		}
	})

	t.Run("stale containers removed at start", func(t *testing.T) {
		dir := d.workspace(t, nil)
		boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
		mk := func(owner string) string {
			id, err := d.run(30*time.Second, "create", "--network", "none",
				"--label", docker.LabelWorkspace+"="+dir, "--label", docker.LabelOwner+"="+owner, d.image, "true")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.run(30*time.Second, "rm", "-f", id) })
			return id
		}
		// A warden that is gone (no such pid, or the pid was reused), and one
		// that is alive (this test): only the first two are removed.
		self := docker.OwnerLabel(os.Getpid())
		mk(strings.TrimSpace(string(boot)) + "/999999999/1")
		mk(self[:strings.LastIndex(self, "/")] + "/1")
		live := mk(self)
		var log syncBuffer
		w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: dir, HostEnv: d.env, StartTimeout: time.Minute, Sandbox: d.sandbox(),
			Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer func() {
			if t.Failed() {
				t.Logf("what the start logged:\n%s", log.String())
			}
		}()
		ids, err := d.run(30*time.Second, "ps", "-a", "-q", "--no-trunc",
			"--filter", "label="+docker.LabelWorkspace+"="+dir, "--filter", "status=created")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(ids); !cmp.Equal(got, []string{live}) {
			owners, _ := d.run(30*time.Second, "ps", "-a", "--no-trunc", "--filter", "label="+docker.LabelWorkspace+"="+dir,
				"--format", `{{.ID}} {{.Status}} {{.Label "`+docker.LabelOwner+`"}}`)
			t.Errorf("created containers after start: %v, want only the live warden's %s (this process: %s)\n%s", got, live, self, owners)
		}
	})
}

func TestDockerRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sb := func(image string) *config.Sandbox {
		return &config.Sandbox{Enabled: true, Backend: jail.BackendDocker, DockerImage: image}
	}
	tests := []struct {
		name string
		opts *sandbox.Options
	}{
		{"no docker_image", &sandbox.Options{Workspace: dir, Sandbox: sb("")}},
		{"no docker client", &sandbox.Options{Workspace: dir, Sandbox: sb("debian:12"), HostEnv: []string{"PATH=/nonexistent"}}},
	}
	if _, err := exec.LookPath("docker"); err == nil {
		tests = append(tests, struct {
			name string
			opts *sandbox.Options
		}{"daemon unreachable", &sandbox.Options{Workspace: dir, Sandbox: sb("debian:12"),
			HostEnv: append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock")}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := sandbox.Start(context.Background(), tc.opts)
			if err == nil {
				w.Close()
				t.Fatal("started")
			}
			if !errors.Is(err, sandbox.ErrBackendUnavailable) {
				t.Fatalf("got %v, want sandbox.ErrBackendUnavailable", err)
			}
			var h interface{ Hint() string }
			if !errors.As(err, &h) || h.Hint() == "" {
				t.Errorf("no hint on %v", err)
			}
			t.Logf("%v (hint: %s)", err, h.Hint())
		})
	}
	if got := docker.Probe(context.Background()); got == "" {
		t.Error("empty probe")
	}
}

// syncBuffer is a bytes.Buffer a logger may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
