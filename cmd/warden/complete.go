package main

import (
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/checkpoint"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/store"
)

// addCompletions registers the dynamic shell completions (warden
// completion bash|zsh|fish|powershell): modes, agents, upstream servers,
// tool names, and the ids of pending requests and active grants. They read
// the configuration and the store as the command would; a failure
// completes nothing rather than print an error into the shell.
func addCompletions(root *cobra.Command, g *globalFlags) {
	modes := []string{config.ModeConfirmSensitive + "\task for writes, commands and network (default)",
		config.ModeAuto + "\tinside a healthy jail, ask only for what leaves it",
		config.ModeConfirmAll + "\task for every call", config.ModeYolo + "\task for nothing"}
	_ = root.RegisterFlagCompletionFunc("mode", fixed(modes))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("agent") != nil {
			_ = c.RegisterFlagCompletionFunc("agent", g.completeAgents)
		}
		if c.Flags().Lookup("upstream") != nil {
			_ = c.RegisterFlagCompletionFunc("upstream", g.completeUpstreams)
		}
		switch c.CommandPath() {
		case "warden tool call", "warden explain":
			if c.CommandPath() == "warden tool call" {
				c.ValidArgsFunction = g.completeTools
			}
			if c.Flags().Lookup("tool") != nil {
				_ = c.RegisterFlagCompletionFunc("tool", g.completeTools)
			}
		case "warden approvals show", "warden approvals approve", "warden approvals deny":
			c.ValidArgsFunction = g.completeRequests
		case "warden approvals revoke":
			c.ValidArgsFunction = g.completeGrants
		case "warden checkpoints show":
			c.ValidArgsFunction = g.completeCheckpoints
		case "warden undo":
			_ = c.RegisterFlagCompletionFunc("to", g.completeCheckpoints)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func fixed(list []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return list, cobra.ShellCompDirectiveNoFileComp
	}
}

func (g *globalFlags) completionConfig() *config.Config {
	cfg, err := app.LoadConfig(g.app(false, false), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil
	}
	return cfg
}

func (g *globalFlags) completeAgents(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	names := slices.Collect(maps.Keys(config.BuiltinAgents))
	if cfg := g.completionConfig(); cfg != nil {
		names = append(names, slices.Collect(maps.Keys(cfg.Agents))...)
	}
	slices.Sort(names)
	return slices.Compact(names), cobra.ShellCompDirectiveNoFileComp
}

func (g *globalFlags) completeUpstreams(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out := []string{"all\tevery [[mcp.servers]] entry"}
	if cfg := g.completionConfig(); cfg != nil {
		for _, s := range cfg.MCP.Servers {
			out = append(out, s.Name+"\t"+s.URL)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (g *globalFlags) completeTools(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return slices.Clone(config.BuiltinTools), cobra.ShellCompDirectiveNoFileComp
}

// completeRequests offers the pending requests, newest first, each with
// its tool, as the page lists them.
func (g *globalFlags) completeRequests(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	st, err := g.completionStore(c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer st.Close()
	list, err := st.List(c.Context(), store.Filter{State: store.Pending, Limit: 50})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, a := range list {
		out = append(out, a.ID+"\t"+completionText(a.Tool+" "+string(a.Args)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func (g *globalFlags) completeGrants(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	st, err := g.completionStore(c)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer st.Close()
	list, err := st.ListGrants(c.Context(), store.GrantFilter{Limit: 50})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, gr := range list {
		out = append(out, gr.ID+"\t"+completionText(gr.Tool+" "+string(gr.Args)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completeCheckpoints offers the workspace's checkpoints, newest first,
// each with the call it was taken before.
func (g *globalFlags) completeCheckpoints(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	cps, err := app.OpenCheckpoints(g.app(false, false), "", slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cps.Close()
	list, err := cps.List()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	slices.SortFunc(list, func(a, b *checkpoint.Checkpoint) int { return b.Time.Compare(a.Time) })
	var out []string
	for _, cp := range list[:min(len(list), 50)] {
		out = append(out, cp.ID+"\t"+completionText(describeCall(cp)))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func (g *globalFlags) completionStore(c *cobra.Command) (*store.DB, error) {
	db, _ := c.Flags().GetString("db")
	cfg := g.completionConfig()
	if cfg == nil {
		cfg = &config.Config{}
	}
	return app.OpenStore(db, cfg.Store)
}

// completionText is a description a shell shows on one line: printable,
// short.
func completionText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return s
}
