package main

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// dbFlag adds --db to cmd: the approvals database (app.OpenStore).
func dbFlag(cmd *cobra.Command) *string {
	return cmd.PersistentFlags().String("db", "", "approvals and audit database: PATH, sqlite:PATH, postgres (URL in $WARDEN_DATABASE_URL or the variable [store] url_env names) or postgres:VAR (default $WARDEN_DB, else [store] url_env, else $XDG_STATE_HOME/warden/warden.db)")
}

func newApprovalsCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, show, approve and deny approval requests",
		Long: `Approval requests live in a database shared by every warden process, so a
call waiting in one terminal can be decided from another.

Who may decide: the supervisors configured in [security.approval] (supervisors
= [{id, token_env}] or supervisor_id). On the command line, --as or
WARDEN_SUPERVISOR names the supervisor; no secret proves it: the local user who
can write the database is trusted (the HTTP API of 'warden serve' needs the
supervisor's bearer token instead).`,
	}
	db := dbFlag(cmd)
	var status string
	list := &cobra.Command{
		Use:   "list",
		Short: "List approval requests (newest first)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var f store.Filter
			if status != "" {
				st, err := store.ParseState(status)
				if err != nil {
					return usageErr("--status: %v", err)
				}
				f.State = st
			}
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			l, err := st.List(c.Context(), f)
			if err != nil {
				return err
			}
			if g.json {
				if l == nil {
					l = []*store.Approval{}
				}
				return writeJSON(c.OutOrStdout(), l)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATE\tTOOL\tCREATED\tDECIDED_BY\tARGUMENTS")
			for _, a := range l {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.State, approval.Printable(a.Tool, 40),
					a.CreatedAt.Local().Format(time.DateTime), approval.Printable(a.DecidedBy, 40), approval.Printable(string(a.Args), 60))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&status, "status", "", "only requests in this state: pending, approved, executed, denied, timed_out, cancelled")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			a, err := st.Get(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), a)
			}
			w := c.OutOrStdout()
			p := func(k, v string) {
				if v != "" {
					fmt.Fprintf(w, "%-17s %s\n", k+":", approval.Printable(v, 0))
				}
			}
			p("request_id", a.ID)
			p("state", string(a.State))
			p("tool", a.Tool)
			p("arguments", string(a.Args))
			p("args_hash", a.ArgsHash)
			p("workspace", a.Workspace)
			p("session_id", a.Session)
			p("agent", a.Agent)
			p("rule", a.Rule)
			p("risk", a.Risk)
			p("created_at", a.CreatedAt.Local().Format(time.RFC3339))
			p("expires_at", a.ExpiresAt.Local().Format(time.RFC3339))
			p("decision", a.Decision)
			p("decided_by", a.DecidedBy)
			if !a.DecidedAt.IsZero() {
				p("decided_at", a.DecidedAt.Local().Format(time.RFC3339))
			}
			p("reason", a.Reason)
			p("execution_result", a.ExecutionResult)
			return nil
		},
	}
	cmd.AddCommand(list, show, newDecideCmd(g, db, true), newDecideCmd(g, db, false), newGrantsCmd(g, db), newRevokeCmd(g, db))
	return cmd
}

// supervisorBroker opens the store and a broker for the supervisor named
// by as (or WARDEN_SUPERVISOR) to decide with. close closes the store.
func supervisorBroker(c *cobra.Command, g *globalFlags, db, as string) (b *approval.Broker, id string, closeFn func(), err error) {
	if as == "" {
		as = os.Getenv("WARDEN_SUPERVISOR")
	}
	log := newLogger(c.ErrOrStderr())
	cfg, err := loadConfig(g, log)
	if err != nil {
		return nil, "", nil, err
	}
	sups := approval.SupervisorIDs(&cfg.Security.Approval)
	if as == "" {
		return nil, "", nil, usageErr("say which supervisor decides: --as ID or WARDEN_SUPERVISOR (configured: %s)", listOrNone(sups))
	}
	if !slices.Contains(sups, as) {
		return nil, "", nil, fmt.Errorf("%q is not a configured supervisor (configured: %s)", as, listOrNone(sups))
	}
	// Any process of the user can write the store; only a supervisor's
	// token makes a decision a supervisor's.
	if err := approval.ProveSupervisor(&cfg.Security.Approval, as, approval.SupervisorProof{Getenv: os.Getenv, Prompt: ttyPrompt()}); err != nil {
		return nil, "", nil, err
	}
	st, err := app.OpenStore(db, cfg.Store)
	if err != nil {
		return nil, "", nil, err
	}
	b, err = approval.New(c.Context(), approval.Options{Store: st, Supervisors: sups, Logger: log,
		GrantMax: approval.GrantMax(&cfg.Security.Approval)})
	if err != nil {
		st.Close()
		return nil, "", nil, err
	}
	return b, as, func() { st.Close() }, nil
}

func newGrantsCmd(g *globalFlags, db *string) *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "grants",
		Short: "List active grants (calls allowed without asking, per session, until they expire)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			st, err := openStore(c, g, *db)
			if err != nil {
				return err
			}
			defer st.Close()
			if _, err := st.ExpireGrants(c.Context()); err != nil {
				return err
			}
			l, err := st.ListGrants(c.Context(), store.GrantFilter{All: all})
			if err != nil {
				return err
			}
			if g.json {
				if l == nil {
					l = []*store.Grant{}
				}
				return writeJSON(c.OutOrStdout(), l)
			}
			tw := tabwriter.NewWriter(c.OutOrStdout(), 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "GRANT\tSTATE\tTOOL\tSESSION\tBY\tEXPIRES\tUSES\tARGUMENTS")
			for _, gr := range l {
				state := "active"
				switch {
				case !gr.RevokedAt.IsZero():
					state = "revoked by " + gr.RevokedBy
				case !gr.Active(time.Now()):
					state = "expired"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", gr.ID, approval.Printable(state, 40), approval.Printable(gr.Tool, 40),
					approval.Printable(gr.Session, 30), approval.Printable(gr.CreatedBy, 30), gr.ExpiresAt.Local().Format(time.DateTime),
					gr.Uses, approval.Printable(string(gr.Args), 60))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&all, "all", false, "also list revoked and expired grants")
	return c
}

func newRevokeCmd(g *globalFlags, db *string) *cobra.Command {
	var as string
	c := &cobra.Command{
		Use:   "revoke GRANT",
		Short: "Revoke a grant: the next identical call is asked again",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			b, sup, closeFn, err := supervisorBroker(c, g, *db, as)
			if err != nil {
				return err
			}
			defer closeFn()
			if err := b.RevokeGrant(c.Context(), args[0], sup); err != nil {
				return err
			}
			gr, err := b.Store().GetGrant(c.Context(), args[0])
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), gr)
			}
			fmt.Fprintf(c.OutOrStdout(), "grant %s revoked by %s\n", gr.ID, gr.RevokedBy)
			return nil
		},
	}
	c.Flags().StringVar(&as, "as", "", "the supervisor revoking (default $WARDEN_SUPERVISOR); their token comes from their token_env, or is asked for on the terminal")
	return c
}

func newDecideCmd(g *globalFlags, db *string, approve bool) *cobra.Command {
	var as, reason string
	var grant time.Duration
	verb := map[bool]string{true: "approve", false: "deny"}[approve]
	c := &cobra.Command{
		Use:   verb + " ID",
		Short: map[bool]string{true: "Approve a pending request", false: "Deny a pending request; the reason reaches the agent"}[approve],
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !approve && strings.TrimSpace(reason) == "" {
				return usageErr("deny needs --reason: the agent is told why")
			}
			if approve && c.Flags().Changed("grant") && grant <= 0 {
				return usageErr("--grant needs a positive duration, e.g. --grant 15m")
			}
			b, sup, closeFn, err := supervisorBroker(c, g, *db, as)
			if err != nil {
				return err
			}
			defer closeFn()
			var a *store.Approval
			var gr *store.Grant
			if grant > 0 {
				a, gr, err = b.ApproveWithGrant(c.Context(), args[0], sup, reason, grant)
			} else {
				a, err = b.Decide(c.Context(), args[0], sup, approve, reason)
			}
			if err != nil {
				return err
			}
			if g.json {
				if gr != nil {
					return writeJSON(c.OutOrStdout(), map[string]any{"approval": a, "grant": gr})
				}
				return writeJSON(c.OutOrStdout(), a)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s %s by %s\n", a.ID, a.State, a.DecidedBy)
			if gr != nil {
				fmt.Fprintf(c.OutOrStdout(), "grant %s: the same %s call in session %s runs without asking until %s (revoke: warden approvals revoke %s)\n",
					gr.ID, approval.Printable(gr.Tool, 40), approval.Printable(gr.Session, 40), gr.ExpiresAt.Local().Format(time.DateTime), gr.ID)
			}
			return nil
		},
	}
	c.Flags().StringVar(&as, "as", "", "the supervisor deciding (default $WARDEN_SUPERVISOR); their token comes from their token_env, or is asked for on the terminal")
	c.Flags().StringVar(&reason, "reason", "", map[bool]string{true: "why (optional)", false: "why (required; the agent reads it)"}[approve])
	if approve {
		c.Flags().DurationVar(&grant, "grant", 0, "also allow the exact same call in the same session without asking for this long (e.g. 15m; capped at grant_max_minutes)")
	}
	return c
}

// loadConfig loads the effective configuration of the global flags.
func loadConfig(g *globalFlags, log *slog.Logger) (*config.Config, error) {
	return app.LoadConfig(g.app(false, false), log)
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// ttyPrompt asks on the controlling terminal without echo, or is nil when
// the process has none (then a token must come from the environment).
func ttyPrompt() func(string) (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	tty.Close()
	return func(q string) (string, error) {
		tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer tty.Close()
		fmt.Fprint(tty, q)
		b, err := term.ReadPassword(int(tty.Fd()))
		fmt.Fprintln(tty)
		return strings.TrimSpace(string(b)), err
	}
}
