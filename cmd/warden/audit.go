package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/store"
)

func newAuditCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read and verify the tamper-evident audit trail",
	}
	db := dbFlag(cmd)

	var last int
	var format string
	approvals := &cobra.Command{
		Use:   "approvals",
		Short: "The last approval decisions",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if g.json {
				format = "json"
			}
			if format != "table" && format != "json" {
				return usageErr("--format %q: want table or json", format)
			}
			if last < 1 {
				return usageErr("--last must be at least 1")
			}
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			rows, err := st.Audit(c.Context(), store.AuditFilter{Event: "approval", Last: last})
			if err != nil {
				return err
			}
			type entry struct {
				RequestID       string          `json:"request_id"`
				Tool            string          `json:"tool"`
				Arguments       json.RawMessage `json:"arguments,omitempty"`
				SessionID       string          `json:"session_id"`
				Decision        audit.Decision  `json:"decision"`
				DecidedBy       string          `json:"decided_by"`
				DecidedAt       time.Time       `json:"decided_at"`
				Reason          string          `json:"reason"`
				ExecutionResult string          `json:"execution_result"`
			}
			out := make([]entry, 0, len(rows))
			for _, r := range rows {
				e := entry{RequestID: r.Record.RequestID, Tool: r.Record.Tool, Arguments: r.Record.Args, SessionID: r.Record.Session,
					Decision: r.Record.Decision, DecidedBy: r.Record.DecidedBy, DecidedAt: r.Time, Reason: r.Record.Reason}
				if e.RequestID != "" {
					if a, err := st.Get(c.Context(), e.RequestID); err == nil {
						e.ExecutionResult = a.ExecutionResult
					}
				}
				out = append(out, e)
			}
			if format == "json" {
				return writeJSON(c.OutOrStdout(), out)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "DECIDED_AT\tREQUEST_ID\tTOOL\tDECISION\tDECIDED_BY\tREASON")
			for _, e := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.DecidedAt.Local().Format(time.DateTime), e.RequestID,
					approval.Printable(e.Tool, 40), e.Decision, approval.Printable(e.DecidedBy, 40), approval.Printable(e.Reason, 60))
			}
			return tw.Flush()
		},
	}
	approvals.Flags().IntVar(&last, "last", 50, "how many decisions")
	approvals.Flags().StringVar(&format, "format", "table", "table or json")

	var n int
	var follow bool
	tail := &cobra.Command{
		Use:   "tail",
		Short: "The last audit rows as JSON lines (--follow for new ones)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			f := store.AuditFilter{Last: n}
			for {
				rows, err := st.Audit(ctx, f)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				for _, r := range rows {
					if err := writeJSONLine(c.OutOrStdout(), r); err != nil {
						return err
					}
					f.After = r.ID
				}
				if !follow {
					return nil
				}
				f.Last = 0
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
	}
	tail.Flags().IntVarP(&n, "lines", "n", 20, "how many rows to print first")
	tail.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new rows")

	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit hash chain; name the first broken row (exit 1)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			rows, head, err := st.VerifyAudit(c.Context())
			var ce *store.ChainError
			if errors.As(err, &ce) {
				if g.json {
					writeJSON(c.OutOrStdout(), map[string]any{"ok": false, "verified_rows": rows, "broken_row": ce.Row, "why": ce.Why})
				}
				return fmt.Errorf("%w (the %d rows before it verify)", ce, rows)
			}
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), map[string]any{"ok": true, "rows": rows, "head": head})
			}
			fmt.Fprintf(c.OutOrStdout(), "audit chain intact: %d rows, head %s\n", rows, head)
			return nil
		},
	}
	cmd.AddCommand(approvals, tail, verify)
	return cmd
}
