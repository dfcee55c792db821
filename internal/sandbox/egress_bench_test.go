package sandbox_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/command"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/egress"
	"github.com/wardenhq/warden/internal/egress/egresstest"
	"github.com/wardenhq/warden/internal/sandbox"
	"github.com/wardenhq/warden/internal/sandbox/jail"
	"github.com/wardenhq/warden/internal/testenv"
)

// BenchmarkEgressJail is the measure of the egress proxy: a
// program in a jail under network = "allowlist" (this test binary, bound
// in as the worker) downloads 100 MB and makes 1,000 small requests, each
// on a new connection, through the jail's relay and the host's gateway,
// against the same program on the host going straight to the server on
// loopback; host and jail alternate. bench/egress.sh prints the ratios.
func BenchmarkEgressJail(b *testing.B) {
	testenv.Need(b, "bwrap")
	const size = 100 << 20
	chunk := make([]byte, 256<<10)
	origin := egresstest.Serve(b, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", strconv.Itoa(size))
			for n := 0; n < size; n += len(chunk) {
				w.Write(chunk)
			}
			return
		}
		w.Write([]byte("ok"))
	}))
	port := strconv.Itoa(int(origin.Port()))
	sb := &config.Sandbox{Enabled: true, Backend: jail.BackendLocal, NetworkMode: config.NetworkAllowlist,
		Egress: config.Egress{Allow: []string{"origin.test"}, Unknown: "deny"}}
	w, err := sandbox.Start(context.Background(), &sandbox.Options{Workspace: b.TempDir(), Sandbox: sb,
		Egress: &sandbox.EgressOptions{StateDir: b.TempDir(),
			Resolver: egress.StaticResolver{"origin.test": {netip.MustParseAddr("127.0.0.1")}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	inJail := func(args ...string) string {
		res, err := w.Runner().Run(context.Background(), command.Spec{Argv: append([]string{jail.JailExe, "sandboxtest-probe"}, args...), Timeout: 10 * time.Minute})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("in the jail %v: %v %q", args, err, res.Output)
		}
		return strings.TrimSpace(res.Output)
	}
	onHost := func(args ...string) string {
		cmd := exec.Command(os.Args[0], append([]string{"sandboxtest-probe"}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("on the host %v: %v %q", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	seconds := func(out string) float64 {
		var n int64
		var s float64
		if _, err := fmt.Sscan(out, &n, &s); err != nil || n != size {
			b.Fatalf("download: %q", out)
		}
		return s
	}
	// CPU per download, split where it is spent: this process (the
	// origin; in the jail's run also warden's gateway, the proxy) and its
	// descendants (the program on the host; in the jail's run the
	// program, the jail's worker and its relay).
	type cpuSplit struct{ self, children time.Duration }
	measure := func(f func() string) (string, cpuSplit) {
		s0, c0 := cpuSelf(), cpuDescendants()
		out := f()
		return out, cpuSplit{cpuSelf() - s0, cpuDescendants() - c0}
	}
	for b.Loop() {
		var ratios, host, jailed []float64
		var hostCPU, jailCPU []cpuSplit
		for range 5 {
			hout, hc := measure(func() string { return onHost("http-download", "http://127.0.0.1:"+port+"/big") })
			jout, jc := measure(func() string { return inJail("http-download", "http://origin.test:"+port+"/big") })
			h, j := seconds(hout), seconds(jout)
			host, jailed = append(host, h), append(jailed, j)
			ratios = append(ratios, h/j)
			hostCPU, jailCPU = append(hostCPU, hc), append(jailCPU, jc)
		}
		slices.Sort(ratios)
		slices.Sort(host)
		slices.Sort(jailed)
		b.ReportMetric(float64(size)/1e6/host[2], "host-MB/s")
		b.ReportMetric(float64(size)/1e6/jailed[2], "jail-MB/s")
		b.ReportMetric(ratios[2], "throughput-ratio")
		ms := func(c []cpuSplit, part func(cpuSplit) time.Duration) float64 {
			v := make([]time.Duration, len(c))
			for i := range c {
				v[i] = part(c[i])
			}
			slices.Sort(v)
			return float64(v[len(v)/2].Microseconds()) / 1000
		}
		self := func(c cpuSplit) time.Duration { return c.self }
		children := func(c cpuSplit) time.Duration { return c.children }
		b.ReportMetric(ms(hostCPU, children), "host-client-cpu-ms")
		b.ReportMetric(ms(hostCPU, self), "host-origin-cpu-ms")
		b.ReportMetric(ms(jailCPU, children), "jail-client-cpu-ms")
		b.ReportMetric(ms(jailCPU, self), "jail-origin+proxy-cpu-ms")

		var hl, jl []int
		for range 5 { // 5 × 200 = 1,000 requests each way, alternating
			v, _ := strconv.Atoi(onHost("http-latency", "http://127.0.0.1:"+port+"/", "200"))
			hl = append(hl, v)
			v, _ = strconv.Atoi(inJail("http-latency", "http://origin.test:"+port+"/", "200"))
			jl = append(jl, v)
		}
		slices.Sort(hl)
		slices.Sort(jl)
		b.ReportMetric(float64(hl[2]), "host-µs/req")
		b.ReportMetric(float64(jl[2]), "jail-µs/req")
		b.ReportMetric(float64(jl[2]-hl[2]), "added-µs/req")
		b.ReportMetric(0, "ns/op")
	}
}

// cpuSelf is the CPU time this process has used.
func cpuSelf() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuDescendants is the CPU time this process's descendants have used:
// those it reaped (a program run on the host), and those living with what
// they reaped in turn (a program run in the jail is reaped by the jail's
// worker, which lives on). /proc counts in 10 ms ticks.
func cpuDescendants() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	reaped := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	ticks := map[int]int64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command name, which ends at the last ')':
		// state ppid … utime(14) stime cutime cstime.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 15 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		for _, k := range f[11:15] {
			n, _ := strconv.ParseInt(k, 10, 64)
			ticks[pid] += n
		}
	}
	self := os.Getpid()
	var total int64
	for pid := range ticks {
		for p := parent[pid]; p != 0; p = parent[p] {
			if p == self {
				total += ticks[pid]
				break
			}
		}
	}
	const clockTicks = 100 // USER_HZ on Linux
	return reaped + time.Duration(total)*time.Second/clockTicks
}
