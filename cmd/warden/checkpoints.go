package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

func newCheckpointsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "List and show the checkpoints warden took of the workspace",
		Long: `Before each call that may change the workspace (write_file, edit_file,
apply_patch, delete_file, and run_command unless the command is safe) warden
records a checkpoint of it, in its state directory. 'warden undo' restores one.`,
	}
	db := dbFlag(cmd)
	var all bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the checkpoints, newest first: the call each preceded, its audit id, time, files changed",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cps, err := openCheckpoints(c, g)
			if err != nil {
				return err
			}
			defer cps.Close()
			h, err := cps.History(c.Context())
			if err != nil {
				return err
			}
			slices.Reverse(h)
			if !all && len(h) > 50 {
				h = h[:50]
			}
			ids := auditIDs(c.Context(), *db, cps.Config.Store)
			if g.json {
				type row struct {
					checkpoint.Entry
					AuditID int64 `json:"audit_id,omitempty"`
				}
				rows := make([]row, len(h))
				for i, e := range h {
					rows[i] = row{e, ids[e.ID]}
				}
				return writeJSON(c.OutOrStdout(), rows)
			}
			if len(h) == 0 {
				fmt.Fprintln(c.OutOrStdout(), "No checkpoints yet.")
				return nil
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tBEFORE\tCHANGED\tAUDIT\tNOT RECORDED")
			for _, e := range h {
				changed := fmt.Sprint(e.Changed)
				if e.Error != "" {
					changed = "?"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Time.Local().Format(time.DateTime), approval.Printable(describeCall(e.Checkpoint), 60),
					changed, auditRef(ids[e.ID]), skipped(e.Checkpoint))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&all, "all", false, "list every checkpoint, not only the newest 50")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one checkpoint and the files changed after it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cps, err := openCheckpoints(c, g)
			if err != nil {
				return err
			}
			defer cps.Close()
			cp, err := cps.Get(args[0])
			if err != nil {
				return withHint(err, "`warden checkpoints list` shows the checkpoints and their ids")
			}
			ch, err := cps.Changes(c.Context(), cp)
			if err != nil {
				return err
			}
			id := auditIDs(c.Context(), *db, cps.Config.Store)[cp.ID]
			if g.json {
				return writeJSON(c.OutOrStdout(), struct {
					*checkpoint.Checkpoint
					AuditID int64           `json:"audit_id,omitempty"`
					Changes []checkpoint.Op `json:"changes"`
				}{cp, id, ch})
			}
			printCheckpoint(c.OutOrStdout(), cp, id, ch)
			return nil
		},
	}
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Read every checkpoint and every file it recorded, checking each against its hash",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cps, err := openCheckpoints(c, g)
			if err != nil {
				return err
			}
			defer cps.Close()
			n, err := cps.Verify(c.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "%d checkpoints whole (%s).\n", n, cps.Dir())
			return nil
		},
	}
	cmd.AddCommand(list, show, verify)
	return cmd
}

// openCheckpoints opens the checkpoints of the workspace g names.
func openCheckpoints(c *cobra.Command, g *globalFlags) (*app.Checkpoints, error) {
	return app.OpenCheckpoints(g.app(false, false), "", newLogger(c.ErrOrStderr()))
}

func printCheckpoint(w io.Writer, c *checkpoint.Checkpoint, auditID int64, ch []checkpoint.Op) {
	p := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-13s %s\n", k+":", v)
		}
	}
	p("checkpoint", c.ID)
	p("time", c.Time.Local().Format(time.DateTime))
	p("before", approval.Printable(describeCall(c), 0))
	if c.Call != nil {
		p("session", c.Call.Session)
		p("request", c.Call.RequestID)
	}
	p("audit", auditRef(auditID))
	p("recorded", fmt.Sprintf("%d files, %s", c.Files, checkpoint.HumanBytes(c.Bytes)))
	if c.SkippedCount > 0 {
		p("not recorded", approval.Printable(c.Note(), 0))
	}
	fmt.Fprintf(w, "files changed after it: %d\n", checkpoint.Files(ch))
	for i, op := range ch {
		if i == maxPlanLines {
			fmt.Fprintf(w, "  … and %d more (--json lists them all)\n", len(ch)-i)
			break
		}
		what := op.Change
		if op.Added > 0 || op.Removed > 0 {
			what += fmt.Sprintf(" +%d −%d", op.Added, op.Removed)
		}
		fmt.Fprintf(w, "  %-12s %s\n", what, approval.Printable(displayPath(op), 0))
	}
}

// auditIDs maps checkpoint ids to the audit rows of the calls they
// preceded, from the latest rows of the audit store (best effort: a
// missing database gives none).
func auditIDs(ctx context.Context, db string, sc config.Store) map[string]int64 {
	ids := map[string]int64{}
	st, err := app.OpenStore(db, sc)
	if err != nil {
		return ids
	}
	defer st.Close()
	rows, err := st.Audit(ctx, store.AuditFilter{Event: "tool_call", Last: 20000})
	if err != nil {
		return ids
	}
	for _, r := range rows {
		if r.Record.Checkpoint != "" {
			ids[r.Record.Checkpoint] = r.ID
		}
	}
	return ids
}

func auditRef(id int64) string {
	if id == 0 {
		return ""
	}
	return fmt.Sprintf("#%d", id)
}

func skipped(c *checkpoint.Checkpoint) string {
	if c.SkippedCount == 0 {
		return ""
	}
	return fmt.Sprint(c.SkippedCount)
}
