package main

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
)

// explainNet is `warden explain --net HOST[:PORT]`: what the jail's egress
// policy does with a destination, and why.
func explainNet(cmd *cobra.Command, g *globalFlags, target string) error {
	cfg, err := app.LoadConfig(g.app(false, false), newLogger(cmd.ErrOrStderr()))
	if err != nil {
		return configErrors(cmd.ErrOrStderr(), err)
	}
	f := g.app(false, false)
	dir, err := filepath.Abs(app.WorkspaceDir(f, cfg))
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	x, err := app.ExplainNet(cmd.Context(), cfg, dir, target, net.DefaultResolver)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if g.json {
		return writeJSON(w, x)
	}
	for _, l := range x.Lines {
		fmt.Fprintln(w, l)
	}
	return nil
}
