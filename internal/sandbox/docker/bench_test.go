package docker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
)

// BenchmarkDockerExecTrue compares, per call of `true`: the persistent
// worker in its container, a `docker exec` per call into that same
// container, and a `docker run --rm` per call, against a dockerd the
// benchmark starts. bench/docker.sh runs it and prints the ratios.
func BenchmarkDockerExecTrue(b *testing.B) {
	d := startTestDockerd(b)
	w, dir := d.start(b, nil, nil)
	name := d.containers(b, dir)[0]
	user := fmt.Sprintf("%d:%d", testUID, testGID)
	b.Run("worker", func(b *testing.B) {
		r := w.Runner()
		spec := command.Spec{Argv: []string{"true"}, Timeout: 10 * time.Second}
		for b.Loop() {
			if res, err := r.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("docker-exec-per-call", func(b *testing.B) {
		for b.Loop() {
			if out, err := d.run(time.Minute, "exec", "--user", user, name, "true"); err != nil {
				b.Fatal(out, err)
			}
		}
	})
	b.Run("docker-run-per-call", func(b *testing.B) {
		for b.Loop() {
			if out, err := d.run(time.Minute, "run", "--rm", "--network", "none",
				"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only", "--user", user,
				"--log-driver", "none", d.image, "true"); err != nil {
				b.Fatal(out, err)
			}
		}
	})
}
