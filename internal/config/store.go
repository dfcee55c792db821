package config

import (
	"net"
	"net/url"
	"strings"
)

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Store is the [store] section: where approvals, grants, leases and the
// audit chain live. Absent, they live in SQLite in the state directory.
type Store struct {
	// URLEnv names the environment variable that holds a PostgreSQL URL
	// (postgres://user:password@host:5432/db). Set, warden uses PostgreSQL;
	// the URL itself is never written in a file.
	URLEnv string `toml:"url_env" yaml:"url_env" json:"url_env,omitempty"`
	// LeaseSecs is how long a waiting caller's lease lasts without a
	// renewal: the longest a request of a process that died stays open
	// before another process cancels it (3..600, default 15).
	LeaseSecs int `toml:"lease_secs" yaml:"lease_secs" json:"lease_secs"`
	// Pinned is set by Load when the managed policy writes url_env (its
	// file:line): then no --db or WARDEN_DB may name another database.
	Pinned string `toml:"-" yaml:"-" json:"-"`
}

// Telemetry is the [telemetry] section: OpenTelemetry export of tool
// calls, approval decisions and egress decisions. Off unless OTLPEndpoint
// is set.
type Telemetry struct {
	// OTLPEndpoint is the collector's OTLP/HTTP (protobuf) base URL,
	// http(s)://host:port[/path]: traces go to /v1/traces and logs to
	// /v1/logs below it. Plain http is accepted only for a loopback host.
	OTLPEndpoint string `toml:"otlp_endpoint" yaml:"otlp_endpoint" json:"otlp_endpoint,omitempty"`
	// HeadersEnv names an environment variable holding request headers
	// for the collector (k=v,k2=v2), such as an API key.
	HeadersEnv string `toml:"headers_env" yaml:"headers_env" json:"headers_env,omitempty"`
	// ServiceName is the service.name resource attribute (default "warden").
	ServiceName string `toml:"service_name" yaml:"service_name" json:"service_name"`
}

func (l *layer) validateStore() {
	s := &l.cfg.Store
	l.envName("store.url_env", s.URLEnv)
	l.intRange("store.lease_secs", s.LeaseSecs, 3, 600)
}

func (l *layer) validateTelemetry() {
	t := &l.cfg.Telemetry
	l.envName("telemetry.headers_env", t.HeadersEnv)
	if l.has("telemetry.service_name") && !namePattern.MatchString(t.ServiceName) {
		l.bad("telemetry.service_name", t.ServiceName, "letters, digits, '-' and '_' only")
	}
	if !l.has("telemetry.otlp_endpoint") || t.OTLPEndpoint == "" {
		return
	}
	u, err := url.Parse(t.OTLPEndpoint)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
		l.bad("telemetry.otlp_endpoint", t.OTLPEndpoint, "must be an http:// or https:// URL without credentials (put them in headers_env)")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		l.bad("telemetry.otlp_endpoint", t.OTLPEndpoint, "plain http only to a loopback collector: audit events would cross the network in clear (use https)")
	}
}
