package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `warden version` and `warden --version` print: the
// module version and the commit the binary was built from.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// stampedVersion and stampedCommit may be set at link time (-ldflags
// "-X main.stampedVersion=v1.2.3 -X main.stampedCommit=abc123") where the
// build has no VCS information (-buildvcs=false, a source tarball).
var stampedVersion, stampedCommit string

func buildVersion() (v versionInfo) {
	v = versionInfo{Version: "(devel)", Go: runtime.Version()}
	defer func() {
		if stampedVersion != "" {
			v.Version = stampedVersion
		}
		if stampedCommit != "" {
			v.Commit = stampedCommit
		}
	}()
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v versionInfo) String() string {
	s := "warden " + v.Version
	if v.Commit != "" {
		s += " (commit " + v.Commit
		if v.Modified {
			s += ", modified"
		}
		if v.Time != "" {
			s += ", " + v.Time
		}
		s += ")"
	}
	return s + " " + v.Go
}

func newVersionCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print warden's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			v := buildVersion()
			if g.json {
				return writeJSON(c.OutOrStdout(), v)
			}
			_, err := fmt.Fprintln(c.OutOrStdout(), v)
			return err
		},
	}
}
