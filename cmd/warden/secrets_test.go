package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/secretenv/secretenvtest"
)

// procReader is the "procreader PID SECRET" command of this test binary:
// another process of the user looking for SECRET in process PID.
func procReader() {
	pid, _ := strconv.Atoi(os.Args[1])
	json.NewEncoder(os.Stdout).Encode(secretenvtest.Probe(pid, []byte(os.Args[2])))
	os.Exit(0)
}

func randomSecret(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// TestServeHidesSecrets runs `warden serve` with a supervisor's token and
// an MCP client's token in its environment, as an unprivileged user when
// the test runs as root, serving a workspace over MCP. A process of the
// same user then finds neither token in /proc/PID/environ nor in its
// memory, and cannot ptrace it; a plain process of that user holding a
// token in its environment (the control) is read at once. The server keeps
// working: the API answers the supervisor's token and an MCP call reads a
// workspace file.
func TestServeHidesSecrets(t *testing.T) {
	t.Parallel()
	cred := secretenvtest.SameUser()
	dir, err := os.MkdirTemp("", "warden-secrets-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, err := os.Executable()
	must(t, err)
	bin, err := os.ReadFile(self)
	must(t, err)
	for _, name := range []string{"warden", "procreader"} {
		must(t, os.WriteFile(filepath.Join(dir, name), bin, 0o755))
	}
	for _, d := range []string{"home", "state", "config/warden", "ws"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o777))
	}
	for _, d := range []string{dir, filepath.Join(dir, "home"), filepath.Join(dir, "state"), filepath.Join(dir, "ws")} {
		must(t, os.Chmod(d, 0o777))
	}
	must(t, os.WriteFile(filepath.Join(dir, "config/warden/config.toml"),
		[]byte("[security.approval]\nsupervisors = [{ id = \"alice\", token_env = \"ALICE_TOKEN\" }]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ws/hello.txt"), []byte("hello from the workspace\n"), 0o644))

	alice, client := randomSecret("alice-"), randomSecret("client-")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir + "/home", "XDG_CONFIG_HOME=" + dir + "/config",
		"XDG_STATE_HOME=" + dir + "/state", "ALICE_TOKEN=" + alice, "WARDEN_MCP_TOKEN_CI=" + client}
	serve := exec.Command(filepath.Join(dir, "warden"), "serve", "--addr", "127.0.0.1:0", "--mcp-workspace", "ws="+dir+"/ws")
	serve.Env = env
	serve.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	stderr, err := serve.StderrPipe()
	must(t, err)
	must(t, serve.Start())
	t.Cleanup(func() { serve.Process.Signal(syscall.SIGTERM); serve.Wait() })
	addr := make(chan string, 1)
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if _, a, ok := strings.Cut(line, "serving approvals on http://"); ok {
				addr <- strings.Fields(a)[0]
			}
		}
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatalf("warden serve did not start:\n%s", log.String())
	}

	// The server works, as this user, non-dumpable.
	req, _ := http.NewRequest("GET", base+"/api/approvals", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/api/approvals with alice's token: %d", resp.StatusCode)
	}
	if out := mcpReadFile(t, base+"/mcp/ws", client, "hello.txt"); !strings.Contains(out, "hello from the workspace") {
		t.Fatalf("read_file over MCP: %s", out)
	}

	// Another process of the same user.
	probe := func(pid int, secret string) secretenvtest.Findings {
		t.Helper()
		rd := exec.Command(filepath.Join(dir, "procreader"), strconv.Itoa(pid), secret)
		rd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := rd.Output()
		if err != nil {
			t.Fatalf("procreader: %v", err)
		}
		var f secretenvtest.Findings
		must(t, json.Unmarshal(out, &f))
		return f
	}
	for name, secret := range map[string]string{"supervisor token": alice, "MCP client token": client} {
		f := probe(serve.Process.Pid, secret)
		t.Logf("%s: %+v", name, f)
		if f.Environ || f.Mem {
			t.Errorf("a process of the same user found the %s of warden serve: %+v", name, f)
		}
		if f.EnvironErr == "" || f.MemErr == "" || f.PtraceErr == "" {
			t.Errorf("a process of the same user could read or attach to warden serve: %+v", f)
		}
	}

	// Control: the same reader on a plain process of that user.
	plain := exec.Command("sleep", "30")
	plain.Env = []string{"ALICE_TOKEN=" + alice}
	plain.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	must(t, plain.Start())
	defer func() { plain.Process.Kill(); plain.Wait() }()
	if f := probe(plain.Process.Pid, alice); !f.Environ {
		t.Fatalf("control: the reader could not read a plain process's environment (%+v); the test proves nothing", f)
	}
}

// mcpReadFile initialises an MCP session over streamable HTTP and calls
// read_file, returning the raw answer.
func mcpReadFile(t *testing.T, url, token, path string) string {
	t.Helper()
	sid := ""
	post := func(body string) string {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			sid = s
		}
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"` + path + `"}}}`)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
