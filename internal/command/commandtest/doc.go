// Package commandtest checks that a command.Runner reports what happened
// to a command the way every other runner does, in the spirit of
// testing/fstest.TestFS: the host's command.Local and the sandbox runner of
// each backend run the same table, so a timeout, an unknown program, a
// signal or a cut output reads the same to the model wherever the command
// ran, and a command line is read by bash, never by sh.
//
// It is a test helper: only tests import it. It has no threat model of its
// own; its rows attack the runner (a line dash would read otherwise,
// children left behind, a command that outlives its timeout).
package commandtest
