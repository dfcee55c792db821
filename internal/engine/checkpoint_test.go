package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/testenv"
)

// withStore gives the fixture's engine a real checkpoint store.
func withStore(t *testing.T, mode string) (*fixture, *checkpoint.Store) {
	t.Helper()
	var store *checkpoint.Store
	f := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = mode }, func(o *Options) {
		s, err := checkpoint.Open(o.Env.Root, &checkpoint.Options{StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		store = s
		o.Checkpoints = s
	})
	return f, store
}

func lastRec(f *fixture) (r struct{ Checkpoint, Decision, Rule string }) {
	f.sink.mu.Lock()
	defer f.sink.mu.Unlock()
	l := f.sink.recs[len(f.sink.recs)-1]
	r.Checkpoint, r.Decision, r.Rule = l.Checkpoint, string(l.Decision), l.Rule
	return r
}

// A call that may change the workspace runs only after a checkpoint; its
// audit record names the checkpoint, the model is told the change can be
// undone, and undoing it restores the workspace.
func TestCheckpointBeforeWrite(t *testing.T) {
	t.Parallel()
	f, store := withStore(t, config.ModeYolo)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("original\n"), 0o644))
	res := f.eng.Call(context.Background(), "write_file", json.RawMessage(`{"path":"a.txt","content":"clobbered\n"}`))
	if !res.Success {
		t.Fatal(res.Error)
	}
	rec := lastRec(f)
	if rec.Checkpoint == "" || !strings.Contains(res.Output, "checkpoint "+rec.Checkpoint+" was taken before this call: the user can undo it") {
		t.Fatalf("audit checkpoint %q, output %q", rec.Checkpoint, res.Output)
	}
	c, err := store.Get(rec.Checkpoint)
	must(err)
	if c.Call == nil || c.Call.Tool != "write_file" || c.Call.Summary != "a.txt" || c.Call.Session != "s1" {
		t.Errorf("checkpoint call %+v", c.Call)
	}
	_, err = store.Undo(context.Background(), c, nil)
	must(err)
	if b, _ := os.ReadFile(filepath.Join(f.dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("a.txt = %q after undo", b)
	}
}

// Which calls are checkpointed: writes and commands that are not safe;
// not reads, not safe commands, not refused, denied or dry-run calls.
func TestWhichCallsAreCheckpointed(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "bash")
	for _, tc := range []struct {
		tool, args string
		want       bool
	}{
		{"write_file", `{"path":"w","content":"x"}`, true},
		{"delete_file", `{"path":"gone"}`, true},
		{"run_command", `{"command":"touch made-by-command"}`, true},
		{"run_command", `{"command":"ls"}`, false},
		{"read_file", `{"path":"gone"}`, false},
		{"write_file", `{"path":".env","content":"x"}`, false}, // refused by a guard
	} {
		t.Run(tc.tool+tc.args, func(t *testing.T) {
			t.Parallel()
			f, _ := withStore(t, config.ModeYolo)
			f.eng.opts.Env.Config.Workspace.AllowDelete = true
			os.WriteFile(filepath.Join(f.dir, "gone"), []byte("x"), 0o644)
			f.eng.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
			if got := lastRec(f).Checkpoint != ""; got != tc.want {
				t.Errorf("checkpoint taken = %v, want %v (record %+v)", got, tc.want, lastRec(f))
			}
		})
	}
}

// A supervised call is checkpointed only once approved, right before it
// runs; a denied one leaves no checkpoint.
func TestCheckpointAfterApproval(t *testing.T) {
	t.Parallel()
	f, store := withStore(t, config.ModeConfirmAll)
	f.appr.answer = approval.Outcome{ID: "r9", State: "DENIED", By: "bob"}
	f.eng.Call(context.Background(), "write_file", json.RawMessage(`{"path":"a","content":"x"}`))
	if all, _ := store.List(); len(all) != 0 {
		t.Fatalf("a denied call left %d checkpoints", len(all))
	}
	f.appr.answer = approval.Outcome{ID: "r10", Approved: true, State: "APPROVED", By: "alice"}
	res := f.eng.Call(context.Background(), "write_file", json.RawMessage(`{"path":"a","content":"x"}`))
	if !res.Success {
		t.Fatal(res.Error)
	}
	all, _ := store.List()
	if len(all) != 1 || all[0].Call.RequestID != "r10" {
		t.Fatalf("checkpoints %+v", all)
	}
}

type failingCheckpointer struct{ err error }

func (f failingCheckpointer) Checkpoint(context.Context, checkpoint.Call) (*checkpoint.Checkpoint, error) {
	return nil, f.err
}

// If the checkpoint fails, the call does not run, and the model is told
// why in a way that stops it retrying.
func TestNoCheckpointNoCall(t *testing.T) {
	t.Parallel()
	for _, err := range []error{errors.New("disk full"), checkpoint.ErrUndoPending} {
		f := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = config.ModeYolo },
			func(o *Options) { o.Checkpoints = failingCheckpointer{err} })
		res := f.eng.Call(context.Background(), "probe", json.RawMessage(`{"path":"x"}`))
		if res.Success || len(*f.ran) != 0 {
			t.Fatalf("the call ran without a checkpoint: %+v", res)
		}
		if !strings.Contains(res.Error, "was not run: warden could not record a checkpoint") || !strings.Contains(res.Error, "do not retry") {
			t.Errorf("error %q", res.Error)
		}
		if errors.Is(err, checkpoint.ErrUndoPending) && !strings.Contains(res.Error, "warden undo --resume") {
			t.Errorf("error %q does not say how to finish the undo", res.Error)
		}
		if r := lastRec(f); r.Rule != "checkpoint-failed" || r.Decision != "error" {
			t.Errorf("audit %+v", r)
		}
	}
}

func TestDryRunTakesNoCheckpoint(t *testing.T) {
	t.Parallel()
	var store *checkpoint.Store
	f := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = config.ModeYolo }, func(o *Options) {
		o.DryRun = true
		s, err := checkpoint.Open(o.Env.Root, &checkpoint.Options{StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		store, o.Checkpoints = s, s
	})
	f.eng.Call(context.Background(), "write_file", json.RawMessage(`{"path":"a","content":"x"}`))
	if all, _ := store.List(); len(all) != 0 {
		t.Fatalf("dry run took %d checkpoints", len(all))
	}
}

// An agent host's own calls (warden hook) are checkpointed as the engine's
// are: before the host is told to run a call that may change the workspace,
// the workspace is recorded, and undoing it takes back what the host did.
// A read is not checkpointed; a call that cannot be is refused.
func TestHostCallCheckpointed(t *testing.T) {
	t.Parallel()
	f, store := withStore(t, config.ModeYolo)
	if err := os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := f.eng.Admit(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), AdmitOptions{Host: "claude-code", HostTool: "Read"})
	if read.Verdict != Allow || read.Checkpoint != "" {
		t.Fatalf("read: %+v", read)
	}
	adm := f.eng.Admit(t.Context(), "write_file", json.RawMessage(`{"path":"a.txt","content":"host wrote\n"}`), AdmitOptions{Host: "claude-code", HostTool: "Write"})
	if adm.Verdict != Allow || adm.Checkpoint == "" || !strings.Contains(adm.Message, adm.Checkpoint) {
		t.Fatalf("write: %+v", adm)
	}
	if rec := lastRec(f); rec.Checkpoint != adm.Checkpoint {
		t.Errorf("audit names checkpoint %q, admission %q", rec.Checkpoint, adm.Checkpoint)
	}
	// The host runs it; then the user undoes it.
	if err := os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("host wrote\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := store.Get(adm.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Undo(t.Context(), c, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("a.txt = %q after undo", b)
	}

	broken := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = config.ModeYolo }, func(o *Options) {
		o.Checkpoints = failingCheckpointer{errors.New("disk full")}
	})
	adm = broken.eng.Admit(t.Context(), "write_file", json.RawMessage(`{"path":"b.txt","content":"x"}`), AdmitOptions{Host: "claude-code", HostTool: "Write"})
	if adm.Verdict != Deny || !strings.Contains(adm.Message, "could not record a checkpoint") {
		t.Fatalf("write without a checkpoint: %+v", adm)
	}
}
