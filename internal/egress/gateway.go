package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/internal/egress/relay"
)

// JailSocketPath is where a gateway's socket is bound inside the jail; the
// relay in the jail dials it.
const JailSocketPath = relay.SocketPath

// GatewayOptions configure the host side of one jail's egress.
type GatewayOptions struct {
	// Server is the server's configuration (Policy required; Broker is
	// made here from Secrets).
	Server Options
	// Secrets are the brokered secrets; StateDir is warden's state
	// directory, under which the workspace's CA and placeholder seed live
	// (WorkspaceDir).
	Secrets  []SecretSpec
	StateDir string
	// RunDir is where the gateway makes its private directory (0700) for
	// the socket and the CA bundle; it must be short enough for a unix
	// socket path.
	RunDir string
	// Getenv reads the secrets' real values (nil: os.LookupEnv).
	Getenv func(string) (string, bool)
	// SystemBundle is the host's CA bundle the jail's bundle starts from
	// (default SystemBundle).
	SystemBundle string
	// Attributor, when set, names the command behind each connection
	// (Server.Attribute is then its Lookup); the gateway closes it.
	Attributor *Attributor
}

// Gateway is a running egress server for one jail, listening on a unix
// socket the backend binds into the jail at JailSocketPath.
type Gateway struct {
	*Server
	// Socket is the unix socket on the host.
	Socket string
	// BundleFile is the CA bundle on the host ("" when no secret is
	// brokered), to bind read-only at JailBundlePath and over the
	// system bundle.
	BundleFile string
	// Env is what the jail's environment gains: the proxy variables, the
	// CA variables (with a bundle) and the placeholders.
	Env []string
	// Broker is nil when no secret is brokered.
	Broker *Broker

	dir  string
	done chan struct{}
	attr *Attributor
}

// StartGateway makes the gateway's directory, the broker (creating the
// workspace CA on first use), the server and its socket, and serves.
func StartGateway(o GatewayOptions) (g *Gateway, err error) {
	if o.RunDir == "" {
		return nil, errors.New("egress gateway: no run directory")
	}
	if err := os.MkdirAll(o.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("egress gateway: %w", err)
	}
	dir, err := os.MkdirTemp(o.RunDir, "egress-")
	if err != nil {
		return nil, fmt.Errorf("egress gateway: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	g = &Gateway{dir: dir, Socket: filepath.Join(dir, "egress.sock"), done: make(chan struct{}), attr: o.Attributor}
	opts := o.Server
	if a := o.Attributor; a != nil {
		opts.Attribute = func(ci ConnInfo) Attribution { return Attribution{Command: a.Lookup(ci)} }
	}
	if len(o.Secrets) > 0 {
		if o.StateDir == "" {
			return nil, errors.New("egress gateway: brokered secrets need warden's state directory")
		}
		g.Broker, err = NewBroker(BrokerOptions{Dir: WorkspaceDir(o.StateDir, opts.Workspace), Secrets: o.Secrets, Getenv: o.Getenv})
		if err != nil {
			return nil, err
		}
		system := o.SystemBundle
		if system == "" {
			system = SystemBundle
		}
		bundle, err := g.Broker.Bundle(system)
		if err != nil {
			return nil, err
		}
		g.BundleFile = filepath.Join(dir, "ca-bundle.pem")
		if err := writeFileAtomic(g.BundleFile, bundle, 0o644); err != nil {
			return nil, err
		}
		opts.Broker = g.Broker
	}
	if g.Server, err = New(&opts); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", g.Socket)
	if err != nil {
		return nil, fmt.Errorf("egress gateway: %w", err)
	}
	// The directory (0700) keeps the host's other users out; the socket
	// itself is for whatever uid the jail runs as.
	if err := os.Chmod(g.Socket, 0o666); err != nil {
		l.Close()
		return nil, fmt.Errorf("egress gateway: %w", err)
	}
	bundleInJail := ""
	if g.BundleFile != "" {
		bundleInJail = JailBundlePath
	}
	g.Env = JailEnv(bundleInJail)
	if g.Broker != nil {
		g.Env = append(g.Env, g.Broker.Env()...)
	}
	go func() {
		defer close(g.done)
		g.Server.ServeRelay(l)
	}()
	return g, nil
}

// Close stops the server, ends its connections and removes the directory.
func (g *Gateway) Close() error {
	err := g.Server.Close()
	<-g.done
	if g.attr != nil {
		g.attr.Close()
	}
	os.RemoveAll(g.dir)
	return err
}
