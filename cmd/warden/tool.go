package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/tools"
)

func newToolCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tool",
		Short: "List warden's tools or call one through the whole engine",
	}
	cmd.AddCommand(newToolCallCmd(g), newToolListCmd(g))
	return cmd
}

// toolFlags are the choices of `warden tool call` and `warden tool list`.
type toolFlags struct {
	agent      string
	dryRun     bool
	noCommands bool
}

// app builds the App the tool commands run in. Each is one call (or none)
// and the process ends: the approver is built only if a person may be asked,
// and the store is left open (see app.Options.LeaveStoreOpen).
func (f *toolFlags) app(cmd *cobra.Command, g *globalFlags) (*app.App, error) {
	return app.New(cmd.Context(), app.Options{Flags: g.app(f.noCommands, f.dryRun), Agent: f.agent, Logger: newLogger(cmd.ErrOrStderr()),
		Approver: app.Lazy(app.TerminalApprover), LeaveStoreOpen: true})
}

func newToolCallCmd(g *globalFlags) *cobra.Command {
	var (
		args string
		so   toolFlags
	)
	cmd := &cobra.Command{
		Use:   "call NAME --args JSON",
		Short: "Run one tool call through the engine; prints the ToolResult JSON",
		Long: `Run one tool call through the whole engine: schema validation, hard
guards, policy, approvals, execution and audit. Prints the ToolResult as
JSON on stdout. Exit status: 0 success, 1 the tool failed or was refused,
2 usage error.`,
		Args: func(cmd *cobra.Command, pos []string) error {
			if err := cobra.ExactArgs(1)(cmd, pos); err != nil {
				return failResult(cmd, usageErr("%v", err))
			}
			return nil
		},
		// The global flags' checks, as the root's, but a refusal is a
		// ToolResult too.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkGlobalFlags(cmd, g); err != nil {
				return failResult(cmd, err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, pos []string) error {
			fail := func(err error) error { return failResult(cmd, err) }
			raw := json.RawMessage(strings.TrimSpace(args))
			if len(raw) == 0 {
				raw = json.RawMessage("{}")
			}
			if !json.Valid(raw) {
				return fail(usageErr("--args is not valid JSON: %s", args))
			}
			a, err := so.app(cmd, g)
			if err != nil {
				return fail(err)
			}
			defer a.Close()
			res := a.Engine().Call(cmd.Context(), pos[0], raw)
			if err := writeJSONLine(cmd.OutOrStdout(), res); err != nil {
				return err
			}
			if !res.Success {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return failResult(c, &exitError{code: exitUsage, err: err})
	})
	f := cmd.Flags()
	f.StringVar(&args, "args", "{}", "the tool's arguments as a JSON object")
	f.BoolVar(&so.dryRun, "dry-run", false, "execute nothing; report what would run")
	f.StringVar(&so.agent, "agent", "", "agent whose tool set applies: build, plan, review, resume or a configured one")
	f.BoolVar(&so.noCommands, "no-commands", false, "do not register run_command")
	return cmd
}

// failResult prints err as the ToolResult a script reads on stdout
// whatever happened (a refused flag included) and returns it: it also goes
// to stderr and sets the exit status.
func failResult(cmd *cobra.Command, err error) error {
	_ = writeJSONLine(cmd.OutOrStdout(), tools.Result{Error: err.Error()})
	return err
}

func newToolListCmd(g *globalFlags) *cobra.Command {
	var so toolFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tools, with their schemas under --json",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := so.app(cmd, g)
			if err != nil {
				return err
			}
			defer a.Close()
			list := a.Engine().Tools()
			out := cmd.OutOrStdout()
			if g.json {
				type entry struct {
					Name        string `json:"name"`
					Description string `json:"description"`
					Group       string `json:"group"`
					Sensitive   bool   `json:"sensitive"`
					Annotations any    `json:"annotations"`
					InputSchema any    `json:"inputSchema"`
				}
				var es []entry
				for _, t := range list {
					es = append(es, entry{t.Name, t.Description, t.Group, t.Sensitive, t.Annotations, t.Schema})
				}
				return writeJSON(out, es)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tGROUP\tSENSITIVE\tDESCRIPTION")
			for _, t := range list {
				desc, _, _ := strings.Cut(t.Description, ". ")
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", t.Name, t.Group, t.Sensitive, desc)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&so.agent, "agent", "", "show the tools of this agent")
	cmd.Flags().BoolVar(&so.noCommands, "no-commands", false, "do not register run_command")
	return cmd
}
