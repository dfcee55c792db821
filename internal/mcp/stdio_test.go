package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"
)

// countingWriter records each Write call.
type countingWriter struct {
	mu     sync.Mutex
	writes []string
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *countingWriter) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

// pipeConn connects a lineConn to the read end of a pipe (pollable, as
// stdin is for NewStdioTransport) and returns it with the write end.
func pipeConn(t *testing.T, max int) (*lineConn, *os.File, *countingWriter) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	out := &countingWriter{}
	c, err := (&lineTransport{r: r, w: out, max: max}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return c.(*lineConn), w, out
}

// readAll reads messages until an error, returning them re-encoded.
func readAll(c *lineConn) ([]string, error) {
	var got []string
	for {
		m, err := c.Read(context.Background())
		if err != nil {
			return got, err
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return got, err
		}
		got = append(got, string(b))
	}
}

func TestLineConnFraming(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200<<10) // several reads of the buffer
	tests := []struct {
		name  string
		input string
		want  []string
		err   string // "" for io.EOF
		max   int    // default 256 KiB
	}{
		{
			name:  "newlines, CRLF, blank lines, last line without newline",
			input: "\n" + `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\r\n\n  \n" + `{"jsonrpc":"2.0","method":"b","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":"s","result":{}}`,
			want:  []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, `{"jsonrpc":"2.0","method":"b","params":{}}`, `{"jsonrpc":"2.0","id":"s","result":{}}`},
		},
		{
			name:  "a message longer than the read buffer",
			input: `{"jsonrpc":"2.0","id":2,"method":"m","params":{"s":"` + long + `"}}` + "\n",
			want:  []string{`{"jsonrpc":"2.0","id":2,"method":"m","params":{"s":"` + long + `"}}`},
		},
		{
			name:  "a message over the limit",
			input: `{"jsonrpc":"2.0","id":3,"method":"m","params":{"s":"` + strings.Repeat("y", 300<<10) + `"}}` + "\n",
			err:   "longer than",
		},
		{
			name:  "a message over the limit, within one buffer",
			input: `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n",
			max:   36,
			err:   "longer than",
		},
		{
			name:  "a message at the limit",
			input: `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n",
			max:   37,
			want:  []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`},
		},
		{
			name:  "not JSON",
			input: "hello\n",
			err:   "unmarshaling jsonrpc message",
		},
		{
			name:  "a no-break space is not white space",
			input: "\u00a0" + `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n",
			err:   "unmarshaling jsonrpc message",
		},
		{
			name:  "data after the message",
			input: `{"jsonrpc":"2.0","id":1,"method":"a"} {"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
			err:   "data after the message",
		},
		{
			// The stdio transport's messages "MUST NOT contain embedded
			// newlines" (MCP, transports).
			name:  "a message over several lines",
			input: "{\n" + `"jsonrpc":"2.0","id":1,"method":"a"}` + "\n",
			err:   "unmarshaling jsonrpc message",
		},
		{
			name:  "wrong version tag",
			input: `{"jsonrpc":"1.0","id":1,"method":"a"}` + "\n",
			err:   "invalid message version tag",
		},
		{
			name:  "an empty batch",
			input: "[]\n",
			err:   "empty batch",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.max == 0 {
				tt.max = 256 << 10
			}
			c, w, _ := pipeConn(t, tt.max)
			go func() {
				_, _ = io.WriteString(w, tt.input)
				w.Close()
			}()
			got, err := readAll(c)
			if tt.err == "" {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("error %v, want io.EOF", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

// A message's params must not share memory with the read buffer: the SDK
// handles calls concurrently, so a later read must not change an earlier
// call's arguments.
func TestLineConnMessagesOwnTheirBytes(t *testing.T) {
	t.Parallel()
	c, w, _ := pipeConn(t, MaxLineLength)
	go func() {
		for i := range 100 {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(rune('0'+i%10))+`,"method":"m","params":{"n":"`+strings.Repeat(string(rune('a'+i%26)), 100)+`"}}`+"\n")
		}
		w.Close()
	}()
	var reqs []*jsonrpc.Request
	for {
		m, err := c.Read(t.Context())
		if err != nil {
			break
		}
		reqs = append(reqs, m.(*jsonrpc.Request))
	}
	if len(reqs) != 100 {
		t.Fatalf("read %d messages, want 100", len(reqs))
	}
	for i, r := range reqs {
		want := `{"n":"` + strings.Repeat(string(rune('a'+i%26)), 100) + `"}`
		if string(r.Params) != want {
			t.Fatalf("message %d's params changed after later reads: %s", i, r.Params)
		}
	}
}

// Close interrupts a Read waiting for input (sdk.Connection requires it:
// the session's end waits for the reader).
func TestLineConnCloseInterruptsRead(t *testing.T) {
	t.Parallel()
	c, _, _ := pipeConn(t, MaxLineLength)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let Read block
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read after Close: %v, want io.EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt Read")
	}
}

// Each message is written with one call, so that concurrent responses
// never interleave and a response costs one write(2).
func TestLineConnWritesOneMessagePerWrite(t *testing.T) {
	t.Parallel()
	c, _, out := pipeConn(t, MaxLineLength)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			id, _ := jsonrpc.MakeID(float64(i))
			res := json.RawMessage(`{"text":"` + strings.Repeat("z", i*100) + `"}`)
			if err := c.Write(t.Context(), &jsonrpc.Response{ID: id, Result: res}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	writes := out.all()
	if len(writes) != 50 {
		t.Fatalf("%d writes for 50 messages", len(writes))
	}
	for _, w := range writes {
		if strings.Count(w, "\n") != 1 || !strings.HasSuffix(w, "}\n") {
			t.Fatalf("a write is not one message and its newline: %.80q", w)
		}
		if _, err := jsonrpc.DecodeMessage([]byte(w)); err != nil {
			t.Fatalf("%v: %.80q", err, w)
		}
	}
}

// Before 2025-06-18 a client may send a batch: its calls' responses go back
// as one array, in the batch's order, once all are answered.
func TestLineConnBatch(t *testing.T) {
	t.Parallel()
	c, w, out := pipeConn(t, MaxLineLength)
	go func() {
		_, _ = io.WriteString(w, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":"two","method":"b"}]`+"\n")
	}()
	var got []string
	for range 3 {
		m, err := c.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.(*jsonrpc.Request).Method)
	}
	if diff := cmp.Diff([]string{"a", "note", "b"}, got); diff != "" {
		t.Fatalf("batch order (-want +got):\n%s", diff)
	}
	two, _ := jsonrpc.MakeID("two")
	one, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(t.Context(), &jsonrpc.Response{ID: two, Result: json.RawMessage(`"B"`)}); err != nil {
		t.Fatal(err)
	}
	if n := len(out.all()); n != 0 {
		t.Fatalf("a response was sent before its batch was complete: %q", out.all())
	}
	if err := c.Write(t.Context(), &jsonrpc.Response{ID: one, Result: json.RawMessage(`"A"`)}); err != nil {
		t.Fatal(err)
	}
	want := []string{`[{"jsonrpc":"2.0","id":1,"result":"A"},{"jsonrpc":"2.0","id":"two","result":"B"}]` + "\n"}
	if diff := cmp.Diff(want, out.all()); diff != "" {
		t.Errorf("batch response (-want +got):\n%s", diff)
	}
	// A response outside any batch goes alone.
	three, _ := jsonrpc.MakeID(float64(3))
	if err := c.Write(t.Context(), &jsonrpc.Response{ID: three, Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got := out.all(); len(got) != 2 || got[1] != `{"jsonrpc":"2.0","id":3,"result":{}}`+"\n" {
		t.Errorf("lone response: %q", got)
	}
}

// A batch that repeats an id, or reuses the id of a call still running, is
// refused: its responses could not be told apart.
func TestLineConnBatchDuplicateIDs(t *testing.T) {
	t.Parallel()
	for _, input := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]`,
		`[{"jsonrpc":"2.0","id":7,"method":"a"}]` + "\n" + `[{"jsonrpc":"2.0","id":7,"method":"b"}]`,
	} {
		c, w, _ := pipeConn(t, MaxLineLength)
		go func() { _, _ = io.WriteString(w, input+"\n"); w.Close() }()
		_, err := readAll(c)
		if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "id") {
			t.Errorf("%s: error %v, want one about the duplicate id", input, err)
		}
	}
}

// From 2025-06-18 on, batches are not part of the protocol: once the
// session negotiated such a revision, a batch ends it, as the SDK's
// transport does.
func TestLineConnBatchRefusedFrom20250618(t *testing.T) {
	t.Parallel()
	c, w, _ := pipeConn(t, MaxLineLength)
	go func() {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n")
	}()
	m, err := c.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res := json.RawMessage(`{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"warden","version":"dev"}}`)
	if err := c.Write(t.Context(), &jsonrpc.Response{ID: m.(*jsonrpc.Request).ID, Result: res}); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = io.WriteString(w, `[{"jsonrpc":"2.0","id":1,"method":"a"}]`+"\n")
	}()
	if _, err := c.Read(t.Context()); err == nil || !strings.Contains(err.Error(), "batching is not supported") {
		t.Errorf("batch after 2025-06-18: %v", err)
	}
}

// The SDK's client and warden's server over lineTransport: initialize,
// list tools, call one.
func TestLineTransportWithSDK(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{})
	if err := os.WriteFile(f.dir+"/a.txt", []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := NewServer(f.eng, nil)
	toServer, clientW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	clientR, fromServer, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- Serve(t.Context(), srv, &lineTransport{r: toServer, w: fromServer, max: MaxLineLength})
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(t.Context(), &sdk.IOTransport{Reader: clientR, Writer: clientW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !bytes.Contains([]byte(res.Content[0].(*sdk.TextContent).Text), []byte("hello")) {
		t.Errorf("read_file: %+v", res.Content[0])
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not end with its client")
	}
}

// FuzzLineConn feeds arbitrary input to the stdio transport's reader: it
// must not panic, and a lone message line must decode as the SDK's decoder
// decodes it.
func FuzzLineConn(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := (&lineTransport{r: io.NopCloser(bytes.NewReader(in)), w: io.Discard, max: 4096}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, _ := readAll(c.(*lineConn))
		line := bytes.Trim(in, jsonSpace)
		if bytes.IndexByte(line, '\n') >= 0 || len(line) == 0 || line[0] == '[' || len(line) > 4096 {
			return
		}
		var want []string
		if m, err := jsonrpc.DecodeMessage(line); err == nil && sjson.Valid(line) {
			if b, err := jsonrpc.EncodeMessage(m); err == nil {
				want = []string{string(b)}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("messages read from %q (-SDK +ours):\n%s", in, diff)
		}
	})
}

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}}` + "\n",
	`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"}]` + "\n",
	"\r\n\n" + `{"jsonrpc":"2.0","id":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}` + "\n[]\n",
	`{"jsonrpc":"2.0","id":1,"method":"a"} {"jsonrpc":"2.0","id":2,"method":"b"}`,
	`{"jsonrpc":"2.0","ID":1,"Method":"a","id":2.5,"method":"tools\/call","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":7}`,
	`[[[[[`,
}

// FuzzDecodeMessage checks decodeMessage against the SDK's
// jsonrpc.DecodeMessage: the same message, or an error from both, for any
// input that is one JSON value; an error for any other.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, gotErr := decodeMessage(in)
		want, wantErr := jsonrpc.DecodeMessage(in)
		if !sjson.Valid(in) {
			if gotErr == nil {
				t.Fatalf("decoded %q, which is not one JSON value", in)
			}
			return
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, the SDK's %v", in, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		gb, err1 := jsonrpc.EncodeMessage(got)
		wb, err2 := jsonrpc.EncodeMessage(want)
		if (err1 == nil) != (err2 == nil) || string(gb) != string(wb) {
			t.Fatalf("%q: decoded %s (%v), the SDK %s (%v)", in, gb, err1, wb, err2)
		}
	})
}

// NewStdioTransport reads a pipe or socket itself and leaves anything else
// (a terminal, a file) to the SDK's transport; either way a session works.
func TestStdioTransportChoice(t *testing.T) {
	t.Parallel()
	msg := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	file := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(file, []byte(msg), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := syscall.Open(file, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.Write(p[1], []byte(msg)); err != nil {
		t.Fatal(err)
	}
	syscall.Close(p[1])
	for _, tt := range []struct {
		name string
		fd   int
		ours bool
	}{{"file", fromFile, false}, {"pipe", p[0], true}} {
		tr := stdioTransport(tt.fd, io.Discard)
		if _, ok := tr.(*lineTransport); ok != tt.ours {
			t.Errorf("%s: transport %T", tt.name, tr)
		}
		c, err := tr.Connect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.Read(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
			t.Errorf("%s: read %#v", tt.name, m)
		}
		if err := c.Close(); err != nil {
			t.Errorf("%s: close: %v", tt.name, err)
		}
	}
}
