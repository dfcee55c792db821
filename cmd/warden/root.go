package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/secretenv"
)

// Exit codes (a contract scripts depend on).
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// globalFlags are the flags every subcommand understands.
type globalFlags struct {
	workspace string
	config    string
	mode      string
	json      bool
	logFile   string
}

// app returns the flags that shape the configuration, with a command's
// own --no-commands and --dry-run.
func (g *globalFlags) app(noCommands, dryRun bool) app.Flags {
	return app.Flags{Workspace: g.workspace, ConfigFile: g.config, Mode: g.mode, LogFile: g.logFile,
		NoCommands: noCommands, DryRun: dryRun}
}

// commands are warden's subcommands (help lists them sorted).
var commands = []func(*globalFlags) *cobra.Command{
	newServeCmd,
	newMCPCmd,
	newRunCmd,
	newExecCmd,
	newToolCmd,
	newExplainCmd,
	newHookCmd,
	newSetupCmd,
	newApprovalsCmd,
	newStoreCmd,
	newUndoCmd,
	newCheckpointsCmd,
	newAuditCmd,
	newConfigCmd,
	newSandboxCmd,
	newDoctorCmd,
	newWorkerCmd,
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "warden",
		Short:         "Let LLM agents use real tools inside lines a person drew",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.workspace, "workspace", "", "workspace directory (default: the current directory)")
	pf.StringVar(&g.config, "config", "", "extra config file, trusted like the user config")
	pf.StringVar(&g.mode, "mode", "", "confirmation mode: yolo | confirm-sensitive | confirm-all")
	pf.BoolVar(&g.json, "json", false, "machine-readable output")
	pf.StringVar(&g.logFile, "log-file", "", "also write the JSON-lines log to this file")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	for _, add := range commands {
		root.AddCommand(add(g))
	}
	return root
}

func run(args []string) int {
	root := newRootCmd(os.Stdout, os.Stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			printError(os.Stderr, ee.err)
		}
		return ee.code
	}
	printError(os.Stderr, err)
	var ue *app.UsageError
	if errors.As(err, &ue) || isUsage(err) {
		return exitUsage
	}
	return exitFailed
}

// exitError carries an exit code out of a cobra command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// silentExit ends the command with code after it has printed its own output.
func silentExit(code int) error { return &exitError{code: code} }

// hintError is an error with a hint: what the user can do about it,
// printed on a line of its own after the error.
type hintError struct {
	err  error
	hint string
}

func (h *hintError) Error() string { return h.err.Error() }
func (h *hintError) Unwrap() error { return h.err }
func (h *hintError) Hint() string  { return h.hint }

func withHint(err error, hint string) error { return &hintError{err, hint} }

// printError prints "warden: error: …", then "warden: hint: …" when the
// error (or one it wraps, like sandbox's) carries a hint.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "warden: error: %v\n", err)
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		fmt.Fprintf(w, "warden: hint: %s\n", h.Hint())
	}
}

// isUsage reports whether cobra refused the command line itself.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// writeJSON writes v as indented JSON: every --json output. Text is
// written as is (no \u003c for <): it is read by people and programs, not
// embedded in HTML.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLine writes v as one line of JSON: a ToolResult, an audit row.
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// newLogger writes human logs to stderr: warnings and errors, or more with
// WARDEN_LOG=info|debug.
func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	switch os.Getenv("WARDEN_LOG") {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// protectSecrets keeps the secrets this process read from its environment
// (tokens, API keys) from the user's other processes: serve, mcp and run
// call it first (see internal/secretenv). A failure is logged, not fatal:
// the process works without it, with its environment as exposed as any.
func protectSecrets(log *slog.Logger) {
	if err := secretenv.Protect(); err != nil {
		log.Warn("could not hide this process's environment from the user's other processes", "err", err)
	}
}
