package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/wardenhq/warden/internal/agent"
	"github.com/wardenhq/warden/internal/app"
	"github.com/wardenhq/warden/internal/approval"
	"github.com/wardenhq/warden/internal/audit"
	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/llm"
	"github.com/wardenhq/warden/internal/policy"
)

// exitNow ends the process at once (the second interrupt).
var exitNow = os.Exit

type runFlags struct {
	agent    string
	model    string
	budget   float64
	maxSteps int
	timeout  float64
	dryRun   bool
}

func newRunCmd(g *globalFlags) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   `run "TASK"`,
		Short: "Run an agent on TASK against an OpenAI-compatible model",
		Long: `Run an agent loop: the task and the agent's tools go to the model named by
[llm] (base_url, model, the API key from the variable api_key_env names);
each tool call the model makes goes through the engine — every guard, policy
and approval — and its result, refusals included, goes back to the model,
until it answers.

Safety nets, each with its stop_reason: max_steps (build 50, plan and review
20, resume 15, or --max-steps), budget (--budget USD, priced by
[llm.prices]), timeout (--timeout S per step: the model call and its tool
calls), context_full (~80k tokens, after compacting old tool results),
interrupted (the first Ctrl-C or SIGTERM finishes the step and asks the model
for a summary; a second Ctrl-C exits 130 at once), error.

stdout carries only the answer, or with --json one object: answer,
stop_reason, steps, cost, tokens. Progress goes to stderr; --log-file keeps
the JSON-lines log of every model and tool call. Exit status: 0 when the
model finished or the user interrupted, 1 when a safety net or an error
stopped the run, 2 on a usage error, 130 on a second interrupt.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd, g, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.agent, "agent", "build", "agent: build, plan, review, resume or one from [agents]")
	fl.StringVar(&f.model, "model", "", "model name (default: [llm] model)")
	fl.Float64Var(&f.budget, "budget", 0, "stop when the run has cost more than this many USD (0: no budget)")
	fl.IntVar(&f.maxSteps, "max-steps", 0, "stop after this many steps (default: the agent's)")
	fl.Float64Var(&f.timeout, "timeout", 0, "seconds one step may take, model call and tool calls (0: no limit)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "execute nothing: tools report what they would do")
	return cmd
}

func runAgent(cmd *cobra.Command, g *globalFlags, f runFlags, task string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case strings.TrimSpace(task) == "":
		return usageErr("the task is empty")
	case f.budget < 0:
		return usageErr("--budget %v: want 0 (none) or more USD", f.budget)
	case f.maxSteps < 0:
		return usageErr("--max-steps %d: want 1 or more (0: the agent's default)", f.maxSteps)
	case f.timeout < 0:
		return usageErr("--timeout %v: want seconds, 0 for none", f.timeout)
	}
	ctx := cmd.Context()
	session := app.NewSessionID("run")
	log := newLogger(stderr)
	protectSecrets(log)
	a, err := app.New(ctx, app.Options{Flags: g.app(false, f.dryRun), Agent: f.agent, Session: session, Logger: log})
	if err != nil {
		return err
	}
	defer a.Close()
	cfg := a.Config()
	log = a.Log()
	ag, err := policy.LookupAgent(cfg, f.agent)
	if err != nil {
		return usageErr("--agent: %v", err)
	}
	maxSteps := ag.MaxSteps
	if f.maxSteps > 0 {
		maxSteps = f.maxSteps
	}
	if maxSteps <= 0 {
		maxSteps = policy.BuiltinAgents["build"].MaxSteps
	}

	model, err := llm.FromConfig(cfg.LLM, f.model, os.LookupEnv, log)
	if err != nil {
		return withHint(err, "set [llm] base_url and model in "+userConfigName()+", and api_key_env to the name of the variable that holds the key")
	}
	prices := llm.Prices(cfg.LLM.Prices)
	if _, ok := prices.Cost(model.Model(), llm.Usage{}); !ok {
		if f.budget > 0 {
			return withHint(fmt.Errorf("--budget needs the price of model %q, and [llm.prices] has none", model.Model()),
				fmt.Sprintf("add [llm.prices.%q] with input and output in USD per million tokens", model.Model()))
		}
		log.Info("no price for the model: cost is not tracked", "model", model.Model())
	}
	mode := policy.EffectiveMode(cfg, ag)
	if mode == config.ModeYolo && !cfg.Commands.AllowedOnly && !f.dryRun {
		fmt.Fprintln(stderr, "warden: warning: yolo mode runs every command the blocklist does not stop, without asking; set commands.allowed_only = true to refuse dangerous ones")
	}

	sink := a.Audit()

	stop, release := handleSignals(stderr, func(code int) {
		rec := audit.Record{Time: time.Now().UTC(), Event: "stop", Session: session, Agent: f.agent, Workspace: a.Workspace(),
			Reason: string(agent.StopInterrupted), Error: "interrupted twice: exited at once"}
		_ = sink.Write(context.Background(), &rec)
		exitNow(code)
	})
	defer release()

	prog := newProgress(stderr)
	res := agent.Run(ctx, task, agent.Options{
		Model: model, Engine: a.Engine(), ModelName: model.Model(), Prices: prices,
		Agent: f.agent, Session: session, Workspace: a.Workspace(),
		MaxSteps: maxSteps, Budget: f.budget, StepTimeout: time.Duration(f.timeout * float64(time.Second)),
		Stop: stop, Audit: sink, Observe: prog.event, Log: log,
	})

	if g.json {
		if err := writeJSONLine(stdout, res); err != nil {
			return err
		}
	} else if res.Answer != "" {
		fmt.Fprintln(stdout, answerText(stdout, res.Answer))
	}
	switch res.StopReason {
	case agent.StopDone, agent.StopInterrupted:
		return nil
	}
	return silentExit(exitFailed)
}

// handleSignals turns the first SIGINT or SIGTERM into a closed stop
// channel (finish the step, then summarise) and a second SIGINT into
// quit(130) at once (a second SIGTERM: quit(143)).
func handleSignals(stderr io.Writer, quit func(code int)) (<-chan struct{}, func()) {
	stop := make(chan struct{})
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "\nwarden: stopping after this step, then asking for a summary; interrupt again to quit now")
		close(stop)
		select {
		case s := <-ch:
			code := 130
			if s == syscall.SIGTERM {
				code = 143
			}
			fmt.Fprintln(stderr, "warden: interrupted twice: quitting now")
			quit(code)
		case <-done:
		}
	}()
	var once sync.Once
	return stop, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

// answerText is the answer as printed: as is into a pipe or a file (it is
// the data the user asked for), with control characters and escape
// sequences made visible on a terminal, where text the model wrote must not
// drive the terminal.
func answerText(w io.Writer, s string) string {
	s = strings.TrimRight(s, "\n")
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = approval.Printable(l, 0)
	}
	return strings.Join(lines, "\n")
}

// progress renders the loop's events on stderr: one live line per step
// on a terminal, plain lines otherwise.
type progress struct {
	w    io.Writer
	live bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.live = true
	}
	return p
}

func (p *progress) event(e agent.Event) {
	switch e.Kind {
	case "step":
		p.line(false, fmt.Sprintf("step %d/%d · %s tokens · $%.4f · asking the model", e.Step, e.MaxSteps, kilo(e.Tokens.Total), e.Cost))
	case "calling":
		if p.live {
			p.line(false, fmt.Sprintf("step %d/%d · %s %s · running", e.Step, e.MaxSteps, e.Tool, e.Args))
		}
	case "tool":
		status := "ok"
		if !e.Success {
			status = "failed: " + e.Error
		}
		p.line(false, fmt.Sprintf("step %d/%d · %s %s · %s", e.Step, e.MaxSteps, e.Tool, e.Args, status))
	case "compact":
		p.line(true, e.Detail)
	case "stopping":
		p.line(true, "stopping: "+e.Detail+"; asking the model for a summary")
	case "stop":
		msg := fmt.Sprintf("stop_reason=%s after %d steps · %s tokens · $%.4f", e.Reason, e.Step, kilo(e.Tokens.Total), e.Cost)
		if e.Detail != "" {
			msg += " · " + e.Detail
		}
		p.line(true, msg)
	}
}

// line prints msg: on a terminal it replaces the live line (and keeps it
// when final), elsewhere it is one plain line.
func (p *progress) line(final bool, msg string) {
	// Tool names, arguments and errors come from the model: never let them
	// reach the terminal as control characters.
	msg = approval.Printable(msg, 0)
	if !p.live {
		fmt.Fprintln(p.w, "warden: "+msg)
		return
	}
	if len(msg) > 150 {
		msg = msg[:cutRunes(msg, 150)] + "…"
	}
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r\033[Kwarden: %s%s", msg, end)
}

func cutRunes(s string, n int) int {
	i := 0
	for j := range s {
		if i == n {
			return j
		}
		i++
	}
	return len(s)
}

func kilo(n int64) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}
