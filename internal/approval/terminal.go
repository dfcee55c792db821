package approval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// maxAnswerLine bounds one line typed at the prompt.
const maxAnswerLine = 4096

// maxGrantAsked is what "s" asks for without minutes: the broker caps it
// at grant_max_minutes.
const maxGrantAsked = 24 * time.Hour

// Terminal is the prompt on this process's terminal. It reads answers from
// in without blocking past ctx's end (it polls the descriptor), so a
// decision made elsewhere ends the prompt cleanly.
type Terminal struct {
	in   *os.File
	out  io.Writer
	sem  chan struct{} // one prompt at a time
	buf  []byte
	poll time.Duration
}

// IsTerminal reports whether both in and out are terminals: the condition
// for prompting at all.
func IsTerminal(in, out *os.File) bool {
	return term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd()))
}

// NewTerminal prompts on out (stderr) and reads answers from in (stdin).
func NewTerminal(in *os.File, out io.Writer) *Terminal {
	return &Terminal{in: in, out: out, sem: make(chan struct{}, 1), poll: 100 * time.Millisecond}
}

var _ Prompter = (*Terminal)(nil)

// Prompt implements Prompter: y approves once; n denies (with a reason
// asked next, or typed after it: "n not now"); s approves and grants the
// same call for the session ("s 15": for 15 minutes; default and cap
// grant_max_minutes); w grants it for every session of the agent in the
// workspace (not for calls that change files); a approves always, writing
// the rule shown into the user config; q stops the run. EOF denies.
func (t *Terminal) Prompt(ctx context.Context, p *Pending) (Answer, error) {
	select {
	case t.sem <- struct{}{}:
		defer func() { <-t.sem }()
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
	fmt.Fprintf(t.out, "\nwarden: approval needed [%s]\n", p.ID)
	fmt.Fprintf(t.out, "  tool:    %s\n", Printable(p.Tool, 200))
	if p.Rule != "" {
		fmt.Fprintf(t.out, "  rule:    %s\n", Printable(p.Rule, 200))
	}
	fmt.Fprintf(t.out, "  args:    %s\n", Printable(string(p.Args), 2000))
	if p.Risk != "" {
		fmt.Fprintf(t.out, "  risk:    %s\n", strings.ReplaceAll(Printable(p.Risk, 4000), `\n`, "\n           "))
	}
	fmt.Fprintf(t.out, "  expires: %s (in %s)\n", p.ExpiresAt.Format(time.RFC3339), time.Until(p.ExpiresAt).Round(time.Second))
	always, alwaysErr := ProposeAlways(p.Tool, p.Args, p.Workspace, nil)
	if alwaysErr == nil {
		fmt.Fprintf(t.out, "  always:  %s\n", strings.ReplaceAll(Printable(DescribeRules(always), 2000), `\n`, "\n           "))
	}
	keys := "[y]es · [n]o · [s]ession [MIN] · [w]orkspace+agent [MIN] · [a]lways · [q]uit"
	if p.Session == "" {
		keys = "[y]es · [n]o · [w]orkspace+agent [MIN] · [a]lways · [q]uit"
	}
	for range 5 {
		fmt.Fprintf(t.out, "Approve? %s: ", keys)
		line, err := t.readLine(ctx)
		if err != nil {
			if errors.Is(err, ctx.Err()) {
				fmt.Fprintln(t.out, "\nwarden: decided elsewhere")
			}
			return Answer{}, err
		}
		word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToLower(word) {
		case "y", "yes":
			return Answer{Approve: true}, nil
		case "q", "quit", "abort":
			return Answer{Abort: true}, nil
		case "a", "always":
			if alwaysErr != nil {
				fmt.Fprintf(t.out, "No lasting rule can cover this call (%s); answer y, s or n.\n", Printable(alwaysErr.Error(), 300))
				continue
			}
			return Answer{Approve: true, Always: true}, nil
		case "s", "session", "w", "workspace":
			wide := strings.HasPrefix(strings.ToLower(word), "w")
			switch {
			case !wide && p.Session == "":
				fmt.Fprintln(t.out, "This request has no session to grant; answer y, w, a or n.")
				continue
			case wide && (fileChange[p.Tool] || p.Workspace == ""):
				fmt.Fprintln(t.out, "This call can be granted for its session only (it changes files, or has no workspace).")
				continue
			}
			d := maxGrantAsked
			if rest = strings.TrimSpace(rest); rest != "" {
				m, err := strconv.Atoi(rest)
				if err != nil || m < 1 {
					fmt.Fprintln(t.out, "Minutes must be a positive number (s 15).")
					continue
				}
				d = time.Duration(m) * time.Minute
			}
			return Answer{Approve: true, Grant: d, WorkspaceGrant: wide}, nil
		case "n", "no":
			if strings.TrimSpace(rest) == "" {
				fmt.Fprint(t.out, "Reason (told to the agent): ")
				if rest, err = t.readLine(ctx); err != nil {
					return Answer{}, err
				}
			}
			return Answer{Reason: strings.TrimSpace(rest)}, nil
		}
		fmt.Fprintln(t.out, "Please answer y, n, s, a or q.")
	}
	return Answer{Reason: "no valid answer at the terminal"}, nil
}

// readLine returns the next line from in, waiting in short polls so it can
// give up when ctx ends. io.EOF when in is closed.
func (t *Terminal) readLine(ctx context.Context) (string, error) {
	for {
		if i := bytes.IndexByte(t.buf, '\n'); i >= 0 {
			line := string(t.buf[:i])
			t.buf = t.buf[i+1:]
			return line, nil
		}
		if len(t.buf) > maxAnswerLine {
			t.buf = t.buf[:0]
			return "", errors.New("answer line too long")
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		fds := []unix.PollFd{{Fd: int32(t.in.Fd()), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(t.poll.Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			// A signal (the Go runtime preempts with SIGURG) ended the
			// wait: nothing is known to be readable, and a read now could
			// block past ctx's end.
			continue
		case err != nil:
			return "", fmt.Errorf("failed to wait for an answer: %w", err)
		case n == 0:
			continue
		}
		var chunk [512]byte
		m, err := unix.Read(int(t.in.Fd()), chunk[:])
		switch {
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN):
			continue
		case err != nil:
			return "", fmt.Errorf("failed to read an answer: %w", err)
		case m == 0:
			if len(t.buf) > 0 {
				line := string(t.buf)
				t.buf = t.buf[:0]
				return line, nil
			}
			return "", io.EOF
		}
		t.buf = append(t.buf, chunk[:m]...)
	}
}
