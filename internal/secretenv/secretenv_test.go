package secretenv

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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

// The test binary plays two more parts, chosen by WARDEN_SECRETENV_PART:
// the victim (holds a token in its environment, Protects itself or not,
// prints its pid and waits) and the reader (another process of the same
// user that tries every way to the victim's environment).
func TestMain(m *testing.M) {
	switch os.Getenv("WARDEN_SECRETENV_PART") {
	case "victim":
		victim()
	case "reader":
		reader()
	default:
		os.Exit(m.Run())
	}
}

const tokenVar = "WARDEN_TEST_TOKEN"

func victim() {
	if os.Getenv("PROTECT") == "1" {
		if err := Protect(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if err := Protect(); err != nil { // twice is harmless
			fmt.Println("error", err)
			os.Exit(1)
		}
	}
	if os.Getenv(tokenVar) == "" {
		fmt.Println("error os.Getenv lost the token")
		os.Exit(1)
	}
	fmt.Println(os.Getpid())
	io.Copy(io.Discard, os.Stdin) // until the test closes it
	os.Exit(0)
}

func reader() {
	pid, _ := strconv.Atoi(os.Args[len(os.Args)-2])
	json.NewEncoder(os.Stdout).Encode(secretenvtest.Probe(pid, []byte(os.Args[len(os.Args)-1])))
	os.Exit(0)
}

// exe copies the test binary where the unprivileged user can run it.
func exe(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "secretenv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "secretenv.test")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProtect starts a victim holding a token, with and without Protect,
// and a reader of the same user: without Protect the reader finds the
// token in /proc/PID/environ and in the victim's memory (so the reader
// works); with it, it finds it nowhere and cannot attach.
func TestProtect(t *testing.T) {
	t.Parallel()
	bin := exe(t)
	cred := secretenvtest.SameUser()
	for _, protect := range []bool{false, true} {
		t.Run(fmt.Sprintf("protect=%v", protect), func(t *testing.T) {
			t.Parallel()
			var b [16]byte
			rand.Read(b[:])
			token := "tok-" + hex.EncodeToString(b[:])
			env := []string{"WARDEN_SECRETENV_PART=victim", tokenVar + "=" + token, "PATH=/usr/bin:/bin"}
			if protect {
				env = append(env, "PROTECT=1")
			}
			v := exec.Command(bin)
			v.Env = env
			v.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
			in, err := v.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := v.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := v.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { in.Close(); v.Wait() }()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("victim: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("victim said %q", line)
			}

			rd := exec.Command(bin, strconv.Itoa(pid), token)
			rd.Env = []string{"WARDEN_SECRETENV_PART=reader"}
			rd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			rd.WaitDelay = 10 * time.Second
			res, err := rd.Output()
			if err != nil {
				t.Fatalf("reader: %v", err)
			}
			var r secretenvtest.Findings
			if err := json.Unmarshal(res, &r); err != nil {
				t.Fatalf("reader said %q", res)
			}
			t.Logf("%+v", r)
			if !protect {
				if !r.Environ || !r.Mem {
					t.Fatalf("control: the reader did not find the token of an unprotected process (%+v); it proves nothing", r)
				}
				return
			}
			if r.Environ || r.Mem {
				t.Errorf("the reader found the token: %+v", r)
			}
			if r.EnvironErr == "" || r.MemErr == "" || r.PtraceErr == "" {
				t.Errorf("a process of the same user could read or attach: %+v", r)
			}
		})
	}
}

// TestProtectClearsEnvironBlock: what /proc/self/environ shows is empty
// after Protect, even to the process itself, while os.Getenv still works.
func TestProtectClearsEnvironBlock(t *testing.T) {
	bin := exe(t)
	v := exec.Command(bin)
	v.Env = []string{"WARDEN_SECRETENV_PART=victim", tokenVar + "=visible-or-not", "PROTECT=1"}
	in, _ := v.StdinPipe()
	out, _ := v.StdoutPipe()
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); v.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(line)
	if _, err := strconv.Atoi(pid); err != nil {
		t.Fatalf("victim said %q", line)
	}
	if os.Getuid() != 0 {
		t.Skip("only root can read a non-dumpable process's environ; TestProtect covers the rest")
	}
	b, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.Trim(b, "\x00")) != 0 {
		t.Errorf("/proc/%s/environ after Protect: %q, want only zero bytes", pid, b)
	}
}
