package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
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

func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// silentExit ends the command with code after it has printed its own output.
func silentExit(code int) error { return &exitError{code: code} }

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

// commands lists the subcommand constructors; each lives in its own file.
var commands []func(*globalFlags) *cobra.Command

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
	if isUsage(err) {
		return exitUsage
	}
	return exitFailed
}

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
