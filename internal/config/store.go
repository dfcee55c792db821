package config

import "regexp"

var hostPortPatt = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$`)

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
}

// Telemetry is the [telemetry] section: OpenTelemetry export of tool
// calls, approval decisions and egress decisions. Off unless OTLPEndpoint
// is set.
type Telemetry struct {
	// OTLPEndpoint is the collector: http(s)://host:port for OTLP over
	// HTTP (protobuf), or host:port with protocol = "grpc".
	OTLPEndpoint string `toml:"otlp_endpoint" yaml:"otlp_endpoint" json:"otlp_endpoint,omitempty"`
	// Protocol is "http" (default) or "grpc".
	Protocol string `toml:"protocol" yaml:"protocol" json:"protocol"`
	// Insecure sends gRPC without TLS (HTTP follows the URL's scheme).
	Insecure bool `toml:"insecure" yaml:"insecure" json:"insecure"`
	// HeadersEnv names an environment variable holding request headers
	// for the collector (k=v,k2=v2), such as an API key.
	HeadersEnv string `toml:"headers_env" yaml:"headers_env" json:"headers_env,omitempty"`
	// ServiceName is the service.name resource attribute (default "warden").
	ServiceName string `toml:"service_name" yaml:"service_name" json:"service_name"`
}

// Telemetry protocols.
const (
	OTLPHTTP = "http"
	OTLPGRPC = "grpc"
)

func (l *layer) validateStore() {
	s := &l.cfg.Store
	l.envName("store.url_env", s.URLEnv)
	l.intRange("store.lease_secs", s.LeaseSecs, 3, 600)
}

func (l *layer) validateTelemetry() {
	t := &l.cfg.Telemetry
	l.oneOf("telemetry.protocol", t.Protocol, OTLPHTTP, OTLPGRPC)
	l.envName("telemetry.headers_env", t.HeadersEnv)
	if l.has("telemetry.service_name") && !namePattern.MatchString(t.ServiceName) {
		l.bad("telemetry.service_name", t.ServiceName, "letters, digits, '-' and '_' only")
	}
	if !l.has("telemetry.otlp_endpoint") || t.OTLPEndpoint == "" {
		return
	}
	if l.has("telemetry.protocol") && t.Protocol == OTLPGRPC {
		if !hostPortPatt.MatchString(t.OTLPEndpoint) {
			l.bad("telemetry.otlp_endpoint", t.OTLPEndpoint, "with protocol = \"grpc\", the endpoint is host:port")
		}
		return
	}
	l.httpURL("telemetry.otlp_endpoint", t.OTLPEndpoint)
}
