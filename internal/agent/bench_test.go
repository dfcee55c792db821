package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/agent"
	"github.com/wardenhq/warden/internal/llm"
	"github.com/wardenhq/warden/internal/llm/llmtest"
)

// benchSteps is the length of one benchmarked run: benchSteps-1 steps that
// read a 4 KiB file, then a final answer.
const benchSteps = 10

// stepScript answers with a read_file call until the conversation holds
// benchSteps-1 tool results, then with an answer.
func stepScript(r *llmtest.Request) llmtest.Turn {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	if n >= benchSteps-1 {
		return llmtest.Turn{Content: "done", PromptTokens: 100, CompletionTokens: 5}
	}
	return llmtest.Turn{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"a.txt"}`}}, PromptTokens: 100, CompletionTokens: 5}
}

func benchFixture(b *testing.B) *fixture {
	f := newFixture(b, setup{files: map[string]string{"a.txt": strings.Repeat("0123456789abcde\n", 256)}})
	f.srv.Discard = true
	f.srv.SetRepeat(llmtest.Turn{Func: stepScript})
	f.opts.Audit = nil
	return f
}

// BenchmarkLoopStep is one step of the whole loop: the adapter encodes the
// conversation and the 11 tool schemas, the scripted server (loopback HTTP,
// no model latency) answers with a read_file call, the engine runs it, the
// result is fed back. Reported per step.
func BenchmarkLoopStep(b *testing.B) {
	f := benchFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res := agent.Run(context.Background(), "read a.txt over and over", f.opts)
		if res.StopReason != agent.StopDone || res.Steps != benchSteps {
			b.Fatalf("res = %+v", res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSteps), "ns/step")
}

// cannedModel answers like stepScript without HTTP or JSON: the loop and
// the engine alone.
type cannedModel struct{}

func (cannedModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			n++
		}
	}
	msg := llm.Message{Role: llm.RoleAssistant, Content: "done"}
	if n < benchSteps-1 {
		msg = llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "read_file", Arguments: `{"path":"a.txt"}`}}}
	}
	return llm.Response{Message: msg, Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 5}}, nil
}

// BenchmarkLoopStepNoHTTP is BenchmarkLoopStep with an in-process model:
// what the loop and the engine cost, without the adapter.
func BenchmarkLoopStepNoHTTP(b *testing.B) {
	f := benchFixture(b)
	f.opts.Model = cannedModel{}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res := agent.Run(context.Background(), "read a.txt over and over", f.opts)
		if res.StopReason != agent.StopDone || res.Steps != benchSteps {
			b.Fatalf("res = %+v", res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchSteps), "ns/step")
}

// BenchmarkEngineReadFile is the engine call a step makes, alone.
func BenchmarkEngineReadFile(b *testing.B) {
	f := benchFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r := f.eng.Call(context.Background(), "read_file", []byte(`{"path":"a.txt"}`)); !r.Success {
			b.Fatal(r.Error)
		}
	}
}

// BenchmarkAdapterComplete is one model call through the adapter to the
// scripted server with a mid-run conversation (5 tool results of 4 KiB and
// the tool schemas).
func BenchmarkAdapterComplete(b *testing.B) {
	f := benchFixture(b)
	model, err := llm.New(llm.Options{BaseURL: f.srv.BaseURL(), Model: "m", Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	var specs []llm.Tool
	for _, t := range f.eng.Tools() {
		p, _ := t.Schema.MarshalJSON()
		specs = append(specs, llm.Tool{Name: t.Name, Description: t.Description, Parameters: p})
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: agent.SystemPrompt("build", f.dir)}, {Role: llm.RoleUser, Content: "task"}}
	for i := range 5 {
		id := string(rune('a' + i))
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: strings.Repeat("0123456789abcde\n", 256)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := model.Complete(context.Background(), llm.Request{Messages: msgs, Tools: specs}); err != nil {
			b.Fatal(err)
		}
	}
}
