package store

import (
	"context"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/audit"
)

// BenchmarkDecide decides pending requests from 25 goroutines at once (the
// deciding half of bench/approvals' 50 clients), each decision one
// transaction with its audit row, on each backend.
//
//	go test -run '^$' -bench Decide -benchtime 2000x ./internal/store/
func BenchmarkDecide(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b, nil)
			ctx := context.Background()
			ids := make(chan string, b.N)
			for range b.N {
				a := newPending(time.Hour, CurrentOwner())
				if err := s.Create(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
				ids <- a.ID
			}
			close(ids)
			b.SetParallelism(13) // ≈25 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := <-ids
					if _, err := s.Decide(ctx, id, approve("alice"), &audit.Record{Event: "approval", Decision: "approved"}); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}

// BenchmarkAppend appends audit records one after another, each its own
// transaction (what one MCP session's sequential calls do), and from 8
// goroutines at once (calls in flight together, which share transactions).
//
//	go test -run '^$' -bench Append -benchtime 3000x ./internal/store/
func BenchmarkAppend(b *testing.B) {
	rec := &audit.Record{Event: "tool_call", Tool: "read_file", Decision: audit.DecisionAllow, Success: true}
	for _, be := range backends {
		b.Run(be.name+"/sequential", func(b *testing.B) {
			s := be.open(b, nil)
			ctx := context.Background()
			for b.Loop() {
				if _, err := s.AppendAudit(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.name+"/parallel8", func(b *testing.B) {
			s := be.open(b, nil)
			ctx := context.Background()
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.AppendAudit(ctx, rec); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}

// BenchmarkList lists the 50 newest of 1,000 pending requests among 5,000
// decided ones: what the supervisor page and bench/approvals' clients ask.
//
//	go test -run '^$' -bench List ./internal/store/
func BenchmarkList(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b, nil)
			ctx := context.Background()
			for i := range 6000 {
				a := newPending(time.Hour, CurrentOwner())
				a.Args = []byte(`{"command":"make test","workdir":"src/pkg"}`)
				if err := s.Create(ctx, a, nil); err != nil {
					b.Fatal(err)
				}
				if i%6 != 0 {
					if _, err := s.Decide(ctx, a.ID, approve("alice"), nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			for b.Loop() {
				got, err := s.List(ctx, Filter{State: Pending, Limit: 50})
				if err != nil || len(got) != 50 {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}
