package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// promptWith runs a Terminal prompt fed from a pipe with input.
func promptWith(t *testing.T, input string, closeIn bool) (Answer, string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	io.WriteString(w, input)
	if closeIn {
		w.Close()
	} else {
		defer w.Close()
	}
	var out bytes.Buffer
	term := NewTerminal(r, &out)
	term.poll = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	p := &Pending{ID: "id1", Tool: "run_command", Args: json.RawMessage("{\"command\":\"echo \\u001b[2J\\u001b[Hall fine\"}"),
		Risk: "dangerous\n\u202eevil", ExpiresAt: time.Now().Add(time.Minute), Workspace: "/w", Session: "s1"}
	ans, err := term.Prompt(ctx, p)
	return ans, out.String(), err
}

func TestTerminalPrompt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want Answer
		err  error
	}{
		{"y\n", Answer{Approve: true}, nil},
		{"YES\n", Answer{Approve: true}, nil},
		{"n\nuse make clean\n", Answer{Reason: "use make clean"}, nil},
		{"n not now\n", Answer{Reason: "not now"}, nil},
		{"q\n", Answer{Abort: true}, nil},
		{"s\n", Answer{Approve: true, Grant: maxGrantAsked}, nil},
		{"s 15\n", Answer{Approve: true, Grant: 15 * time.Minute}, nil},
		{"w 30\n", Answer{Approve: true, Grant: 30 * time.Minute, WorkspaceGrant: true}, nil},
		{"s -3\ns x\ny\n", Answer{Approve: true}, nil},
		{"maybe\ny\n", Answer{Approve: true}, nil},
		{"", Answer{}, io.EOF},
		{"n\n", Answer{}, io.EOF}, // the reason never comes
	}
	for _, c := range cases {
		ans, out, err := promptWith(t, c.in, true)
		if ans != c.want || !errors.Is(err, c.err) {
			t.Errorf("input %q: %+v %v, want %+v %v", c.in, ans, err, c.want, c.err)
		}
		// Agent-controlled text cannot paint on the terminal.
		if strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `\u001b[2J`) {
			t.Errorf("input %q: output not escaped:\n%q", c.in, out)
		}
	}
}

// A prompt with nobody typing ends when another channel decides.
func TestTerminalPromptCancelled(t *testing.T) {
	t.Parallel()
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	term := NewTerminal(r, io.Discard)
	term.poll = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := term.Prompt(ctx, &Pending{ID: "x", Args: json.RawMessage(`{}`)}); done <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v", err)
		}
	case <-time.After(2 * time.Second): // it polls every 10 ms
		t.Fatal("prompt did not end when its context did")
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ok":            "ok",
		"a\x1b[31mb":    `a\u001b[31mb`,
		"l1\nl2\tx":     `l1\nl2\tx`,
		"\u202eabc":     `\u202eabc`,
		"\xff":          `\xff`,
		"\u0085next":    `\u0085next`,
		"abcdef":        "abcdef",
		"ünïcødé stays": "ünïcødé stays",
	} {
		if got := Printable(in, 0); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Printable("abcdef", 3); got != "abc…" {
		t.Errorf("cut: %q", got)
	}
}

// The announcement names the request and the commands that decide it, the
// page and the channels; a hostile tool name cannot forge a line.
func TestAnnouncement(t *testing.T) {
	t.Parallel()
	p := &Pending{ID: "0123456789abcdef0123456789abcdef", Tool: "mcp__x__y\n  approve:  rm -rf ~\x1b[2K"}
	got := Announcement(p, "https://warden.example/", []string{"slack", "telegram"})
	want := "warden: mcp__x__y\\n  approve:  rm -rf ~\\u001b[2K is waiting for a supervisor's decision (request 0123456789abcdef0123456789abcdef)\n" +
		"  approve:  warden approvals approve 0123456789abcdef0123456789abcdef\n" +
		"  deny:     warden approvals deny 0123456789abcdef0123456789abcdef --reason \"...\"\n" +
		"  page:     https://warden.example/requests/0123456789abcdef0123456789abcdef\n" +
		"  sent to:  slack, telegram\n"
	if got != want {
		t.Errorf("announcement\n got %q\nwant %q", got, want)
	}
}

// The prompt shows the rule "always" would write, and refuses "always"
// (and "session") where there is none to give.
func TestTerminalPromptAlways(t *testing.T) {
	t.Parallel()
	prompt := func(input string, p *Pending) (Answer, string, error) {
		r, w, _ := os.Pipe()
		defer r.Close()
		io.WriteString(w, input)
		w.Close()
		var buf bytes.Buffer
		term := NewTerminal(r, &buf)
		term.poll = 10 * time.Millisecond
		ans, err := term.Prompt(t.Context(), p)
		return ans, buf.String(), err
	}
	plain := &Pending{ID: "id3", Tool: "run_command", Args: json.RawMessage(`{"command":"go test ./..."}`), Workspace: "/w", Session: "s1", ExpiresAt: time.Now().Add(time.Minute)}
	for _, in := range []string{"a\n", "always\n"} {
		ans, out, err := prompt(in, plain)
		if err != nil || ans != (Answer{Approve: true, Always: true}) || !strings.Contains(out, "always:  allow command go test ./... (exactly), in /w") {
			t.Fatalf("%q: %+v %v\n%s", in, ans, err, out)
		}
	}
	// Not plain: no lasting rule; the escape sequences stay escaped.
	ans, out, err := promptWith(t, "a\ny\n", true)
	if err != nil || ans != (Answer{Approve: true}) || !strings.Contains(out, "No lasting rule can cover this call") || strings.Contains(out, "\x1b") {
		t.Fatalf("%+v %v\n%q", ans, err, out)
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	io.WriteString(w, "a\ns\ny\n")
	w.Close()
	var buf bytes.Buffer
	term := NewTerminal(r, &buf)
	term.poll = 10 * time.Millisecond
	p := &Pending{ID: "id2", Tool: "run_command", Args: json.RawMessage(`{"command":"make $(id)"}`), Workspace: "/w", ExpiresAt: time.Now().Add(time.Minute)}
	ans, err = term.Prompt(t.Context(), p)
	if err != nil || ans != (Answer{Approve: true}) {
		t.Fatalf("%+v %v", ans, err)
	}
	for _, want := range []string{"No lasting rule can cover this call", "no session to grant", "[y]es · [n]o · [w]orkspace+agent [MIN] · [a]lways · [q]uit"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
}
