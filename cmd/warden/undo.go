package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/config"
)

// maxPlanLines bounds the changes a plan prints; --json lists them all.
const maxPlanLines = 500

func newUndoCmd(g *globalFlags) *cobra.Command {
	var (
		to               string
		dryRun, yes      bool
		resume, rollback bool
	)
	var db *string
	cmd := &cobra.Command{
		Use:   "undo [--to ID] [--dry-run] [--yes]",
		Short: "Restore the workspace to a checkpoint (default: as it was before the last call)",
		Long: `Restore the workspace to the state warden recorded before a call that
changed it: by default the last one, or the checkpoint --to names (an id from
'warden checkpoints list', or its first 6 or more characters).

undo shows what it will change first: files it removes (added since), restores
(deleted since) or reverts (modified since, with the lines changed), and mode
changes. On a terminal it then asks; elsewhere it needs --yes, or it prints the
plan and changes nothing. What it applies is exactly the plan it showed: if the
workspace changed in between, nothing is applied.

An undo is checkpointed first, so it can be undone too (the result names the
checkpoint), and it is audited. Masked and protected paths, and files a
checkpoint did not record (too large, hard links), are never written: the plan
says which. If an undo is interrupted (a crash, kill -9), warden refuses every
call that would change the workspace until --resume finishes it or --rollback
restores the workspace as it was before the undo.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if resume && rollback {
				return usageErr("--resume and --rollback exclude each other")
			}
			if (resume || rollback) && (to != "" || dryRun) {
				return usageErr("--resume and --rollback take no --to or --dry-run: they finish or undo the interrupted undo")
			}
			return runUndo(c, g, undoArgs{to: to, dryRun: dryRun, yes: yes, resume: resume, rollback: rollback, db: *db})
		},
	}
	db = dbFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the checkpoint to restore (default: the one before the last call)")
	f.BoolVar(&dryRun, "dry-run", false, "show what the undo would change, change nothing")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask (needed without a terminal)")
	f.BoolVar(&resume, "resume", false, "finish an interrupted undo")
	f.BoolVar(&rollback, "rollback", false, "undo an interrupted undo: restore the workspace as it was before it")
	return cmd
}

type undoArgs struct {
	to, db                        string
	dryRun, yes, resume, rollback bool
}

func runUndo(c *cobra.Command, g *globalFlags, a undoArgs) error {
	ctx := c.Context()
	out, errOut := c.OutOrStdout(), c.ErrOrStderr()
	log := newLogger(errOut)
	cps, err := openCheckpoints(c, g)
	if err != nil {
		return err
	}
	defer cps.Close()
	j, err := cps.Pending()
	if err != nil {
		return err
	}
	if a.resume || a.rollback {
		if j == nil {
			return checkpoint.ErrNoUndoPending
		}
		event, verb := checkpoint.EventResume, "Finished the undo to"
		target := j.Target
		if a.rollback {
			event, verb, target = checkpoint.EventRollback, "Rolled back the undo: restored", j.Before
		}
		var res *checkpoint.UndoResult
		if a.rollback {
			res, err = cps.Rollback(ctx)
		} else {
			res, err = cps.Resume(ctx)
		}
		tc, _ := cps.Get(target)
		if aerr := auditUndo(ctx, a.db, cps.Config.Store, g, checkpoint.AuditUndo(event, cps.Workspace(), tc, res, err, undoer())); aerr != nil {
			log.Error("failed to audit the undo", "error", aerr)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s checkpoint %s (%d changes).\n", verb, target, len(res.Plan.Changes()))
		return nil
	}
	if j != nil {
		return fmt.Errorf("%w: an undo to checkpoint %s was interrupted; run `warden undo --resume` to finish it or `warden undo --rollback` to go back", checkpoint.ErrUndoPending, j.Target)
	}
	var target *checkpoint.Checkpoint
	if a.to != "" {
		if target, err = cps.Get(a.to); err != nil {
			return withHint(err, "`warden checkpoints list` shows the checkpoints and their ids")
		}
	} else {
		if target, err = cps.Latest(); err != nil {
			return err
		}
		if target == nil {
			return errors.New("there is no checkpoint to undo to: warden records one before each call that may change this workspace")
		}
	}
	p, err := cps.Plan(ctx, target)
	if err != nil {
		return err
	}
	if g.json {
		if err := writeJSON(out, p); err != nil {
			return err
		}
	} else {
		printPlan(out, target, p)
	}
	if a.dryRun || p.Empty() {
		return nil
	}
	if !a.yes {
		if !isTerminal(os.Stdin) || !isTerminal(os.Stderr) {
			return withHint(errors.New("not a terminal, and --yes was not given: nothing was changed"), "run again with --yes to apply the plan above")
		}
		fmt.Fprintf(errOut, "Apply this undo (%d files and directories)? [y/N] ", len(p.Changes()))
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			fmt.Fprintln(errOut, "Nothing was changed.")
			return silentExit(exitFailed)
		}
	}
	res, err := cps.Undo(ctx, target, &checkpoint.UndoOptions{Expect: p.Digest})
	if aerr := auditUndo(ctx, a.db, cps.Config.Store, g, checkpoint.AuditUndo(checkpoint.EventUndo, cps.Workspace(), target, res, err, undoer())); aerr != nil {
		log.Error("failed to audit the undo", "error", aerr)
	}
	if err != nil {
		return err
	}
	if !g.json {
		fmt.Fprintf(out, "Restored checkpoint %s. Checkpoint %s holds the workspace as it was just before: `warden undo --to %s` takes this undo back.\n",
			target.ID, res.Before.ID, res.Before.ID)
	}
	for _, w := range res.Before.Warnings {
		log.Warn(w)
	}
	return nil
}

// printPlan writes what an undo to c would change, one path a line.
func printPlan(w io.Writer, c *checkpoint.Checkpoint, p *checkpoint.Plan) {
	fmt.Fprintf(w, "Undo to checkpoint %s, taken %s before %s:\n", c.ID, c.Time.Local().Format(time.DateTime), describeCall(c))
	ch := p.Changes()
	if len(ch) == 0 {
		fmt.Fprintln(w, "  nothing to change: the workspace matches this checkpoint.")
	}
	for i, op := range ch {
		if i == maxPlanLines {
			fmt.Fprintf(w, "  … and %d more (--json lists them all)\n", len(ch)-i)
			break
		}
		fmt.Fprintf(w, "  %-8s %s  (%s)\n", verbOf(op), approval.Printable(displayPath(op), 0), sinceOf(op))
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note: %s\n", approval.Printable(n, 0))
	}
	if len(ch) > 0 {
		fmt.Fprintf(w, "%d files and directories.\n", len(ch))
	}
}

// displayPath ends a directory's path with a slash.
func displayPath(op checkpoint.Op) string {
	if op.Dir {
		return op.Path + "/"
	}
	return op.Path
}

// verbOf says what the undo does to a path.
func verbOf(op checkpoint.Op) string {
	switch {
	case op.Op == checkpoint.OpRemove:
		return "remove"
	case op.Op == checkpoint.OpChmod:
		return "chmod"
	case op.Change == checkpoint.ChangeDeleted:
		return "restore"
	case op.Change == checkpoint.ChangeType:
		return "replace"
	}
	return "revert"
}

// sinceOf says what happened to a path since the checkpoint.
func sinceOf(op checkpoint.Op) string {
	switch op.Change {
	case checkpoint.ChangeAdded:
		return "added since: " + op.Was
	case checkpoint.ChangeDeleted:
		return "deleted since"
	case checkpoint.ChangeMode:
		return fmt.Sprintf("mode changed since, now %s; back to %04o", op.Was, uint32(op.Perm))
	case checkpoint.ChangeType:
		return "replaced since by a " + op.Was
	}
	s := "modified since"
	if op.Added > 0 || op.Removed > 0 {
		s += fmt.Sprintf(", +%d −%d lines", op.Added, op.Removed)
	}
	return s
}

func describeCall(c *checkpoint.Checkpoint) string {
	switch {
	case c.Reason == checkpoint.ReasonUndo:
		return "an undo to " + c.UndoTo
	case c.Call == nil:
		return "a call"
	case c.Call.Summary != "":
		return fmt.Sprintf("%s %s", c.Call.Tool, approval.Printable(c.Call.Summary, 80))
	}
	return c.Call.Tool
}

// auditUndo appends an undo's record to the audit store (and the
// --log-file mirror).
func auditUndo(ctx context.Context, db string, sc config.Store, g *globalFlags, rec *audit.Record) error {
	st, err := app.OpenStore(db, sc)
	if err != nil {
		return err
	}
	defer st.Close()
	var errs []error
	if _, err := st.AppendAudit(context.WithoutCancel(ctx), rec); err != nil {
		errs = append(errs, err)
	}
	if g.logFile != "" {
		f, err := audit.OpenFile(g.logFile)
		if err == nil {
			err = f.Write(ctx, rec)
			f.Close()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// undoer names who undid, for the audit: the local user.
func undoer() string {
	if u, err := user.Current(); err == nil {
		return "user:" + u.Username
	}
	return "user:" + os.Getenv("USER")
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
