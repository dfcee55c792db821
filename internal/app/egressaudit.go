package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/egress"
)

// EgressAudit writes the egress server's events to the audit trail as
// "egress" records, in order, from a goroutine of its own: a connection's
// end does not wait for the store. When a thousand events are waiting, a
// connection's end waits (events are never dropped).
type EgressAudit struct {
	sink audit.Sink
	log  *slog.Logger
	ch   chan egress.Event
	done chan struct{}
	once sync.Once
}

// NewEgressAudit starts the writer; Close flushes and stops it.
func NewEgressAudit(sink audit.Sink, log *slog.Logger) *EgressAudit {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &EgressAudit{sink: sink, log: log, ch: make(chan egress.Event, 1024), done: make(chan struct{})}
	go a.run()
	return a
}

// EgressEvent implements egress.Auditor.
func (a *EgressAudit) EgressEvent(e egress.Event) { a.ch <- e }

// Close writes what is waiting and stops; events after it are lost.
func (a *EgressAudit) Close() {
	a.once.Do(func() { close(a.ch) })
	<-a.done
}

func (a *EgressAudit) run() {
	defer close(a.done)
	for e := range a.ch {
		if err := a.sink.Write(context.Background(), EgressRecord(e)); err != nil {
			a.log.Error("failed to audit an egress connection", "host", e.Host, "port", e.Port, "error", err)
		}
	}
}

// EgressRecord is the audit record of one egress event: tool
// network_connect, the destination and what crossed in Args.
func EgressRecord(e egress.Event) *audit.Record {
	args, _ := json.Marshal(struct {
		Host      string   `json:"host"`
		Port      int      `json:"port,omitempty"`
		Proto     string   `json:"proto"`
		Addr      string   `json:"addr,omitempty"`
		TLS       string   `json:"tls,omitempty"`
		Secrets   []string `json:"secrets,omitempty"`
		BytesUp   int64    `json:"bytes_up"`
		BytesDown int64    `json:"bytes_down"`
		Command   string   `json:"command,omitempty"`
	}{e.Host, e.Port, e.Proto, e.Addr, e.TLS, e.Secrets, e.BytesUp, e.BytesDown, e.Command})
	r := &audit.Record{Time: e.Time, Event: "egress", Session: e.Session, Workspace: e.Workspace, Tool: EgressTool,
		Args: args, Rule: e.Rule, DecidedBy: e.DecidedBy, Reason: e.Reason,
		Duration: float64(e.Duration.Microseconds()) / 1000}
	if e.Decision == "allow" {
		r.Decision = audit.DecisionAllow
		r.Success = e.Reason == ""
		r.Error = e.Reason
		r.Reason = ""
	} else {
		r.Decision = audit.DecisionDeny
	}
	return r
}
