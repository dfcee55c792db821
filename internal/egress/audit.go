package egress

import (
	"sync/atomic"
	"time"
)

// Event is one audited connection: a tunnel (CONNECT, SOCKS5) from open to
// close, or one absolute-form HTTP request. Refusals are events too.
type Event struct {
	Time      time.Time `json:"time"`
	Workspace string    `json:"workspace,omitempty"`
	Session   string    `json:"session,omitempty"`
	Command   string    `json:"command,omitempty"`
	// Proto is how the jail asked: "connect", "http" (absolute-form) or
	// "socks5".
	Proto string `json:"proto"`
	// Host is the canonical host; a host that could not be made canonical
	// is shown as received, quoted.
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	// Addr is the address dialled (after the checks), when one was.
	Addr string `json:"addr,omitempty"`
	// Decision is "allow" or "deny".
	Decision string `json:"decision"`
	// Rule is what decided: `allow "github.com:443"`, `unknown = "ask"`…
	Rule string `json:"rule,omitempty"`
	// DecidedBy is "policy", or who answered when a person was asked.
	DecidedBy string `json:"decided_by,omitempty"`
	// Reason says why a connection was refused or failed.
	Reason string `json:"reason,omitempty"`
	// TLS is "sni" (checked, passed through), "terminated" (brokered
	// secrets), or "" (not TLS).
	TLS string `json:"tls,omitempty"`
	// Secrets are the environment variables whose real values were sent.
	Secrets   []string      `json:"secrets,omitempty"`
	BytesUp   int64         `json:"bytes_up"`
	BytesDown int64         `json:"bytes_down"`
	Duration  time.Duration `json:"duration_ns"`
}

// Auditor receives every event. It is called from the connection's
// goroutine when the connection ends, and must not block for long.
type Auditor interface {
	EgressEvent(Event)
}

// AuditFunc adapts a function to Auditor.
type AuditFunc func(Event)

// EgressEvent calls f.
func (f AuditFunc) EgressEvent(e Event) { f(e) }

// Stats are a server's counters since it started.
type Stats struct {
	Allowed   int64 `json:"allowed"`
	Denied    int64 `json:"denied"`
	Asked     int64 `json:"asked"`
	Active    int64 `json:"active"`
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

type counters struct {
	allowed, denied, asked, active, up, down atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{Allowed: c.allowed.Load(), Denied: c.denied.Load(), Asked: c.asked.Load(), Active: c.active.Load(),
		BytesUp: c.up.Load(), BytesDown: c.down.Load()}
}
