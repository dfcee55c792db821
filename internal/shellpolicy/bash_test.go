package shellpolicy

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestParseMatchesBash is a differential oracle: every corpus command must
// parse (or fail to parse) under real `bash -n` exactly as under our
// parser, so that what we judge is what bash would run.
func TestParseMatchesBash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs bash for every corpus row")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	var rows []corpusRow
	rows = append(rows, readCorpus(t, "testdata/attacks.jsonl")...)
	rows = append(rows, readCorpus(t, "testdata/benign.jsonl")...)
	for _, r := range rows {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cmd := exec.CommandContext(ctx, bash, "-n", "-c", r.Cmd)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("bash -n %q timed out", r.Cmd)
		}
		bashOK := err == nil
		v := Judge(r.Cmd, nil)
		oursOK := v.ParseError == ""
		if bashOK != oursOK {
			t.Errorf("%q: bash -n ok=%v (%s), ours ok=%v (%s)", r.Cmd, bashOK, out, oursOK, v.ParseError)
		}
		if !oursOK && (!v.Blocked || v.Rule != RuleParseError) {
			t.Errorf("%q: parse error not blocked as %s: %+v", r.Cmd, RuleParseError, v)
		}
	}
}
