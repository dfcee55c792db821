package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	egresspolicy "github.com/wardenhq/warden/internal/egress/policy"
)

// ErrNoNarrowRule means no rule can cover a call without covering more
// than it: a command line that is not plain, a file tool without a path.
var ErrNoNarrowRule = errors.New("no narrow rule covers this call")

// fileTools name the paths their calls change in "path"; apply_patch's
// paths are in the patch, so its narrowest rule is per path changed.
var fileTools = map[string]bool{"write_file": true, "edit_file": true, "delete_file": true, "read_file": true}

// Narrowest returns the allow rules that cover exactly this call and as
// little else as the rules can say: for a command line one exact rule per
// simple command (a plain line only); for a file tool its path, literally;
// for http_request its host; for a connection (NetworkTool) its host and
// port; for any other tool the tool. paths are the
// workspace-relative paths the call changes (apply_patch's files).
func Narrowest(tool string, args json.RawMessage, paths []string) ([]Spec, error) {
	var a struct {
		Command string `json:"command"`
		Path    string `json:"path"`
		URL     string `json:"url"`
	}
	_ = json.Unmarshal(args, &a)
	switch {
	case tool == NetworkTool:
		t, err := NetworkTarget(args)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoNarrowRule, err)
		}
		return []Spec{{Tool: tool, Host: t, Decision: Allow}}, nil
	case tool == CommandTool:
		argvs, err := Plain(a.Command)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoNarrowRule, err)
		}
		var out []Spec
		seen := map[string]bool{}
		for _, argv := range argvs {
			k := JoinArgv(argv)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, Spec{Command: argv, Exact: true, Decision: Allow})
		}
		return out, nil
	case tool == "http_request":
		u, err := url.Parse(a.URL)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("%w: no host in the URL", ErrNoNarrowRule)
		}
		return []Spec{{Tool: tool, Host: strings.ToLower(u.Hostname()), Decision: Allow}}, nil
	case fileTools[tool] || tool == "apply_patch":
		if fileTools[tool] && a.Path != "" {
			paths = []string{a.Path}
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("%w: the call names no path", ErrNoNarrowRule)
		}
		var out []Spec
		for _, p := range paths {
			c := path.Clean(p)
			if strings.HasPrefix(c, "/") || c == "." || c == ".." || strings.HasPrefix(c, "../") {
				return nil, fmt.Errorf("%w: %q is not a workspace path", ErrNoNarrowRule, p)
			}
			out = append(out, Spec{Tool: tool, Path: EscapeGlob(c), Decision: Allow})
		}
		return out, nil
	}
	return []Spec{{Tool: tool, Decision: Allow}}, nil
}

// NetworkTarget returns the canonical "host:port" of a NetworkTool
// request's arguments ({"host": …, "port": …}), the text its host rules
// match.
func NetworkTarget(args json.RawMessage) (string, error) {
	var a struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("a connection's arguments: %w", err)
	}
	if a.Port < 1 || a.Port > 65535 {
		return "", fmt.Errorf("a connection's port %d is not 1-65535", a.Port)
	}
	host := a.Host
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // the proxy names an IPv6 address bare
	}
	h, err := egresspolicy.ParseHost(host)
	if err != nil {
		return "", err
	}
	return egresspolicy.Target{Host: h, Port: uint16(a.Port)}.String(), nil
}

// EscapeGlob quotes the pattern characters of a literal path so that a
// path rule matches that path only.
func EscapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
