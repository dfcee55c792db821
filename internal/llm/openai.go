package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/wardenhq/warden/internal/config"
)

// DefaultBaseURL is used when [llm] base_url is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults of Options.
const (
	DefaultTimeout      = 120 * time.Second
	DefaultBackoff      = 500 * time.Millisecond
	DefaultMaxRetryWait = 60 * time.Second
	DefaultMaxBody      = 32 << 20
	maxBackoff          = 8 * time.Second
)

// Options configure an OpenAI adapter. The zero value of every optional
// field is the default.
type Options struct {
	// BaseURL of the OpenAI-compatible API, e.g. http://127.0.0.1:8080/v1.
	BaseURL string
	// Model is the model name sent with every request (required).
	Model string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	// Use FromConfig to take it from the environment as configured.
	APIKey string
	// Timeout bounds each attempt (default 120 s).
	Timeout time.Duration
	// Retries is how many times a transient failure is retried (0: never).
	Retries int
	// Backoff is the delay before the first retry, doubled for each next
	// one, with jitter (default 500 ms; capped at 8 s). A Retry-After
	// header from the server takes precedence.
	Backoff time.Duration
	// MaxRetryWait is the longest Retry-After honoured (default 60 s): a
	// server asking for more gets no retry, and its error is returned.
	MaxRetryWait time.Duration
	// MaxBody bounds a reply's size (default 32 MiB).
	MaxBody int64
	// Transport carries the requests (default: a clone of
	// http.DefaultTransport). Redirects are refused whatever it is.
	Transport http.RoundTripper
	// Log receives retries and warnings; nil discards them.
	Log *slog.Logger
}

// OpenAI is a Client for OpenAI-compatible chat completions.
type OpenAI struct {
	opts Options
	svc  openai.ChatCompletionService
	host string
}

var _ Client = (*OpenAI)(nil)

// FromConfig builds an adapter from the [llm] section. The API key is read
// with lookup (os.LookupEnv) from the variable api_key_env names, and from
// nowhere else; a missing variable is a warning, not an error, since local
// servers need no key. model overrides c.Model when not empty.
func FromConfig(c config.LLM, model string, lookup func(string) (string, bool), log *slog.Logger) (*OpenAI, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if model == "" {
		model = c.Model
	}
	o := Options{BaseURL: c.BaseURL, Model: model, Retries: c.Retries, Log: log}
	if c.Timeout > 0 {
		o.Timeout = time.Duration(c.Timeout) * time.Second
	}
	if c.APIKeyEnv != "" {
		key, ok := lookup(c.APIKeyEnv)
		if !ok || key == "" {
			log.Warn("the API key variable is not set; sending no key", "env", c.APIKeyEnv)
		}
		o.APIKey = key
	}
	return New(o)
}

// New checks o and returns an adapter.
func New(o Options) (*OpenAI, error) {
	if o.Model == "" {
		return nil, errors.New("no model: set [llm] model in the config or pass --model")
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm base_url %q: want an http:// or https:// URL", o.BaseURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("llm base_url: credentials in the URL are refused; put the key in the variable that [llm] api_key_env names")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Retries < 0 {
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxRetryWait <= 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.APIKey != "" && u.Scheme == "http" && !isLoopback(u.Hostname()) {
		o.Log.Warn("the API key will cross the network unencrypted (base_url is http://)", "host", u.Host)
	}
	hc := &http.Client{
		Transport: &limitTransport{base: o.Transport, max: o.MaxBody},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return &redirectError{to: req.URL.Redacted()}
		},
	}
	// Service options only: openai.NewClient would also read OPENAI_API_KEY,
	// OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS... from the
	// environment, and the key must come from api_key_env alone.
	opts := []option.RequestOption{
		option.WithBaseURL(o.BaseURL),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0), // retries are ours: 429, 5xx and network only
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	return &OpenAI{opts: o, svc: openai.NewChatCompletionService(opts...), host: u.Host}, nil
}

// Model is the model the adapter asks.
func (c *OpenAI) Model() string { return c.opts.Model }

// Complete sends req, retrying transient failures.
func (c *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := c.params(req)
	if err != nil {
		return Response{}, err
	}
	for attempt := 1; ; attempt++ {
		res, err := c.once(ctx, params)
		if err == nil {
			return convert(res)
		}
		err = c.classify(err, attempt)
		wait, retry := c.retryAfter(err, attempt)
		if !retry || attempt > c.opts.Retries || ctx.Err() != nil {
			return Response{}, err
		}
		c.opts.Log.Info("model request failed; retrying", "attempt", attempt, "wait", wait.String(), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, fmt.Errorf("%w (gave up waiting to retry: %v)", err, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *OpenAI) once(ctx context.Context, params openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	return c.svc.New(ctx, params)
}

func (c *OpenAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.opts.Model)}
	if req.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("message role %q: want system, user, assistant or tool", m.Role)
		}
	}
	for _, t := range req.Tools {
		var params shared.FunctionParameters
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return p, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p, nil
}

// convert turns the SDK's reply into a Response.
func convert(res *openai.ChatCompletion) (Response, error) {
	if res == nil || len(res.Choices) == 0 {
		return Response{}, errors.New("the model endpoint returned no choices")
	}
	ch := res.Choices[0]
	out := Response{
		FinishReason: ch.FinishReason,
		Model:        res.Model,
		Usage:        Usage{PromptTokens: max(res.Usage.PromptTokens, 0), CompletionTokens: max(res.Usage.CompletionTokens, 0)},
		Message:      Message{Role: RoleAssistant, Content: ch.Message.Content},
	}
	if out.Message.Content == "" && ch.Message.Refusal != "" {
		out.Message.Content = ch.Message.Refusal
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Function.Name == "" && tc.Type != "function" {
			continue // custom tools are never offered, so never called
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i) // some local servers send none
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

// classify turns an SDK or transport error into one of ours, with the API
// key scrubbed from every text in it.
func (c *OpenAI) classify(err error, attempt int) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		se := &StatusError{Status: apiErr.StatusCode, Message: c.scrub(apiErr.Message), Attempts: attempt}
		if apiErr.Response != nil {
			return &statusWithHeader{StatusError: se, header: apiErr.Response.Header}
		}
		return se
	}
	return &NetworkError{Host: c.host, msg: c.scrub(err.Error()), err: err, Attempts: attempt}
}

// retryAfter says whether err is worth retrying and after how long.
func (c *OpenAI) retryAfter(err error, attempt int) (time.Duration, bool) {
	var sh *statusWithHeader
	if errors.As(err, &sh) {
		if !sh.Transient() {
			return 0, false
		}
		if d, ok := ParseRetryAfter(sh.header, time.Now()); ok {
			if d > c.opts.MaxRetryWait {
				return 0, false
			}
			return d, true
		}
		return c.backoff(attempt), true
	}
	var se *StatusError
	if errors.As(err, &se) {
		return c.backoff(attempt), se.Transient()
	}
	var ne *NetworkError
	if errors.As(err, &ne) && ne.Transient() {
		return c.backoff(attempt), true
	}
	return 0, false
}

func (c *OpenAI) backoff(attempt int) time.Duration {
	d := c.opts.Backoff << (attempt - 1)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	// ±25% jitter so clients that failed together do not retry together.
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

func (c *OpenAI) scrub(s string) string {
	if c.opts.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.opts.APIKey, "[REDACTED]")
}

// statusWithHeader keeps the reply's headers (for Retry-After) next to
// the error without making them part of its API.
type statusWithHeader struct {
	*StatusError
	header http.Header
}

func (s *statusWithHeader) Unwrap() error { return s.StatusError }

// NetworkError is a request that got no usable HTTP reply: no connection,
// a timeout, a cut or malformed reply, a refused redirect.
type NetworkError struct {
	Host     string
	Attempts int
	msg      string
	err      error
}

func (e *NetworkError) Error() string {
	s := fmt.Sprintf("the request to the model endpoint %s failed: %s", e.Host, e.msg)
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

func (e *NetworkError) Unwrap() error { return e.err }

// Transient reports whether the failure may go away by itself: a refused
// or reset connection, a timeout, a cut reply. A redirect or a reply too
// large is not.
func (e *NetworkError) Transient() bool {
	var re *redirectError
	var tl *tooLargeError
	if errors.As(e.err, &re) || errors.As(e.err, &tl) {
		return false
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(e.err, &ue) || errors.As(e.err, &ne) ||
		errors.Is(e.err, context.DeadlineExceeded) || errors.Is(e.err, io.ErrUnexpectedEOF) ||
		errors.Is(e.err, syscall.ECONNRESET) || errors.Is(e.err, syscall.ECONNREFUSED)
}

type redirectError struct{ to string }

func (e *redirectError) Error() string {
	return fmt.Sprintf("the model endpoint redirected to %s, which is refused (the key would follow); set [llm] base_url to the final address", e.to)
}

// ParseRetryAfter reads how long a server asks to wait: Retry-After-Ms
// (milliseconds, sent by OpenAI), or Retry-After in seconds or as an HTTP
// date. Negative, unparsable or absurd values are ignored.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		var ms float64
		if _, err := fmt.Sscanf(v, "%g", &ms); err == nil && ms >= 0 && ms < 1e9 && !strings.ContainsAny(v, " \t") {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, ok := parseSeconds(v); ok {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func parseSeconds(v string) (int64, bool) {
	if len(v) == 0 || len(v) > 9 {
		return 0, false
	}
	var n int64
	for _, r := range v {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int64(r-'0')
	}
	return n, true
}

// limitTransport cuts replies longer than max.
type limitTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = &limitedBody{rc: res.Body, left: t.max, max: t.max}
	return res, nil
}

type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the reply is larger than %d bytes", e.max)
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
	max  int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a reply of exactly max from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, &tooLargeError{b.max}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
