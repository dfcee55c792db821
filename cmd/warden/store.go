package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/store"
)

// openStore opens the approvals database for a command that has no
// configuration of its own yet: the configuration says where it is
// ([store] url_env, and whether the managed policy pins it).
func openStore(c *cobra.Command, g *globalFlags, db string) (*store.DB, error) {
	cfg, err := loadConfig(g, newLogger(c.ErrOrStderr()))
	if err != nil {
		return nil, err
	}
	return app.OpenStore(db, cfg.Store)
}

func newStoreCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Maintain the approvals and audit database",
	}
	var from, to string
	migrate := &cobra.Command{
		Use:   "migrate --from sqlite:PATH --to postgres",
		Short: "Copy requests, grants and the audit trail into a new, empty database",
		Long: `Copy every approval request, grant, lease and audit row of one database into
another that is still empty (a second run refuses: the target is no longer
empty), then verify the audit chain on the target and check that it ends at
the source's head hash. Stop the warden processes that use the source first:
what they write meanwhile is not copied.

A database is sqlite:PATH (or a path), postgres (the URL in $WARDEN_DATABASE_URL,
or the variable [store] url_env names) or postgres:VAR (the URL in $VAR).
Allow-always rules live in the user's configuration, not in the database: they
need no migration.`,
		Example: `  export WARDEN_DATABASE_URL='postgres://warden:…@db.internal:5432/warden'
  warden store migrate --from sqlite:$HOME/.local/state/warden/warden.db --to postgres`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usageErr("give both --from and --to")
			}
			cfg, err := loadConfig(g, newLogger(c.ErrOrStderr()))
			if err != nil {
				return err
			}
			src, err := store.ParseLocator(from, cfg.Store.URLEnv)
			if err != nil {
				return usageErr("--from: %v", err)
			}
			dst, err := store.ParseLocator(to, cfg.Store.URLEnv)
			if err != nil {
				return usageErr("--to: %v", err)
			}
			if src == dst {
				return usageErr("--from and --to name the same database (%s)", src)
			}
			if src.Backend == store.BackendSQLite {
				// Opening creates a missing file: a typo must not copy an
				// empty database and call it done.
				if _, err := os.Stat(src.Path); errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("--from %s: no such file", src.Path)
				}
			}
			ctx, cancel := context.WithTimeout(c.Context(), 30*time.Second)
			defer cancel()
			s, err := store.Open(ctx, src, os.Getenv, nil)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			defer s.Close()
			d, err := store.Open(ctx, dst, os.Getenv, nil)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			defer d.Close()
			rep, err := store.Copy(c.Context(), s, d)
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(c.OutOrStdout(), map[string]any{
					"from": s.Where(), "to": d.Where(), "requests": rep.Requests, "grants": rep.Grants,
					"leases": rep.Leases, "audit_rows": rep.AuditRows, "audit_head": rep.Head, "audit_chain": "intact",
				})
			}
			fmt.Fprintf(c.OutOrStdout(), "copied %s → %s: %d requests, %d grants, %d leases, %d audit rows\n",
				s.Where(), d.Where(), rep.Requests, rep.Grants, rep.Leases, rep.AuditRows)
			fmt.Fprintf(c.OutOrStdout(), "audit chain verified on the target: %d rows, head %s (the source's)\n", rep.AuditRows, rep.Head)
			return nil
		},
	}
	migrate.Flags().StringVar(&from, "from", "", "the database to copy: sqlite:PATH, postgres or postgres:VAR")
	migrate.Flags().StringVar(&to, "to", "", "the empty database to copy into")
	cmd.AddCommand(migrate)
	return cmd
}
