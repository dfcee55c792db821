package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineLength bounds one newline-delimited message on the stdio
// transport, as the SDK's sdk.DefaultMaxLineLength does.
const MaxLineLength = sdk.DefaultMaxLineLength

// NewStdioTransport returns the transport of `warden mcp`: newline-delimited
// JSON-RPC on stdin and stdout.
//
// When stdin is a pipe or a socket (an MCP client starting warden), it is
// read on the goroutine that asks for the next message, through Go's
// poller, and each message is written with one write(2). The SDK's
// StdioTransport reads on a goroutine of its own and hands every message
// over a channel: with one call at a time, that hop and its wakeup are part
// of every call's round trip. Otherwise (a terminal, a file) it is the
// SDK's transport.
func NewStdioTransport() sdk.Transport {
	return stdioTransport(0, os.Stdout)
}

// stdioTransport is NewStdioTransport reading the descriptor in (0 for
// stdin) and writing out. A pipe or socket is put in non-blocking mode
// (which the process at its other end does not see), so that reads go
// through the poller and Close interrupts a Read waiting for input, as
// sdk.Connection requires.
func stdioTransport(in int, out io.Writer) sdk.Transport {
	fallback := func() sdk.Transport {
		if in == 0 {
			return &sdk.StdioTransport{}
		}
		return &sdk.IOTransport{Reader: os.NewFile(uintptr(in), "input"), Writer: nopCloser{out}}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(in, &st); err != nil {
		return fallback()
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return fallback()
	}
	if err := syscall.SetNonblock(in, true); err != nil {
		return fallback()
	}
	// os.NewFile registers a non-blocking descriptor with the poller.
	return &lineTransport{r: os.NewFile(uintptr(in), "input"), w: out, max: MaxLineLength}
}

// nopCloser is an io.WriteCloser whose Close does nothing: the session's
// end does not close stdout.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// lineTransport is newline-delimited JSON-RPC over r and w, read on the
// caller's goroutine. Close must interrupt a Read: r must be pollable.
type lineTransport struct {
	r   io.ReadCloser
	w   io.Writer
	max int // the longest message read, in bytes
}

// Connect implements sdk.Transport.
func (t *lineTransport) Connect(context.Context) (sdk.Connection, error) {
	return &lineConn{
		r:       t.r,
		br:      bufio.NewReaderSize(t.r, 64<<10),
		max:     t.max,
		w:       t.w,
		closed:  make(chan struct{}),
		batches: map[jsonrpc.ID]*respBatch{},
	}, nil
}

// lineConn is one session on a lineTransport.
type lineConn struct {
	r   io.Closer
	br  *bufio.Reader
	max int
	// line collects a message longer than br's buffer (reads are
	// serialised by the SDK; only Read touches it).
	line  []byte
	queue []jsonrpc.Message // the rest of a batch, not yet returned

	// initID is the id of the client's initialize request: its response
	// says which protocol revision the session speaks, which decides
	// whether batches are allowed (protocolVersion).
	mu              sync.Mutex
	initID          jsonrpc.ID
	protocolVersion string
	batches         map[jsonrpc.ID]*respBatch

	writeMu sync.Mutex
	w       io.Writer
	buf     []byte

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

// respBatch collects the responses to a batch of calls, which go back as
// one array once every call of it is answered (JSON-RPC 2.0, batch).
type respBatch struct {
	pending   int
	responses []*jsonrpc.Response
	index     map[jsonrpc.ID]int
}

// batchesUntil is the first protocol revision that removed JSON-RPC
// batches.
const batchesUntil = "2025-06-18"

// SessionID implements sdk.Connection: stdio has no session id.
func (c *lineConn) SessionID() string { return "" }

// Read implements sdk.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	for {
		line, err := c.readLine()
		if err != nil {
			select {
			case <-c.closed:
				return nil, io.EOF
			default:
			}
			if errors.Is(err, os.ErrClosed) {
				return nil, io.EOF
			}
			return nil, err
		}
		line = bytes.Trim(line, jsonSpace)
		if len(line) == 0 {
			continue // a blank line between messages
		}
		if line[0] == '[' {
			return c.readBatch(line)
		}
		msg, err := decodeMessage(line)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" && req.ID.IsValid() {
			c.mu.Lock()
			c.initID = req.ID
			c.mu.Unlock()
		}
		return msg, nil
	}
}

// readLine returns the next line without its newline; it is valid until
// the next call. At the end of the input, a last line without a newline is
// returned before io.EOF.
func (c *lineConn) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == nil && len(line) <= c.max {
		return line[:len(line)-1], nil
	}
	c.line = append(c.line[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(c.line) > c.max {
			break
		}
		line, err = c.br.ReadSlice('\n')
		c.line = append(c.line, line...)
	}
	if n := len(bytes.TrimRight(c.line, "\n")); n > c.max {
		return nil, fmt.Errorf("read message: longer than %d bytes", c.max)
	}
	if err == nil {
		return c.line[:len(c.line)-1], nil
	}
	if errors.Is(err, io.EOF) && len(bytes.Trim(c.line, jsonSpace)) > 0 {
		return c.line, nil // the next read returns io.EOF again
	}
	return nil, err
}

// readBatch decodes a batch of messages (protocol revisions before
// 2025-06-18 only), returns its first and queues the rest.
func (c *lineConn) readBatch(line []byte) (jsonrpc.Message, error) {
	c.mu.Lock()
	v := c.protocolVersion
	c.mu.Unlock()
	if v >= batchesUntil {
		return nil, fmt.Errorf("JSON-RPC batching is not supported in %s and later (session version: %s)", batchesUntil, v)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, fmt.Errorf("decode batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &respBatch{index: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
			if _, dup := b.index[req.ID]; dup {
				return nil, fmt.Errorf("duplicate message id %v in a batch", req.ID.Raw())
			}
			b.index[req.ID] = len(b.responses)
			b.responses = append(b.responses, nil)
		}
		msgs = append(msgs, m)
	}
	if len(b.responses) > 0 {
		c.mu.Lock()
		for id := range b.index {
			if _, dup := c.batches[id]; dup {
				c.mu.Unlock()
				return nil, fmt.Errorf("batch reuses the id %v of a call still running", id.Raw())
			}
		}
		b.pending = len(b.responses)
		for id := range b.index {
			c.batches[id] = b
		}
		c.mu.Unlock()
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// Write implements sdk.Connection: one write per message (or per batch of
// responses).
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	if resp, ok := msg.(*jsonrpc.Response); ok {
		batch, held, err := c.answered(resp)
		if err != nil || held {
			return err
		}
		data = batch
	}
	if data == nil {
		var err error
		if data, err = jsonrpc.EncodeMessage(msg); err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.buf = append(append(c.buf[:0], data...), '\n')
	_, err := c.w.Write(c.buf)
	if cap(c.buf) > 64<<10 {
		c.buf = nil // do not keep a large result's buffer
	}
	return err
}

// answered notes resp: the negotiated revision if it answers initialize,
// its place if it belongs to a batch. It returns the batch's encoding when
// resp completes one, held when it waits for the rest of its batch, and
// neither when resp goes alone.
func (c *lineConn) answered(resp *jsonrpc.Response) (batch []byte, held bool, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.initID.IsValid() && resp.ID == c.initID {
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if json.Unmarshal(resp.Result, &r) == nil {
			c.protocolVersion = r.ProtocolVersion
		}
		c.initID = jsonrpc.ID{}
	}
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false, nil
	}
	delete(c.batches, resp.ID)
	b.responses[b.index[resp.ID]] = resp
	if b.pending--; b.pending > 0 {
		return nil, true, nil
	}
	raws := make([]json.RawMessage, len(b.responses))
	for i, r := range b.responses {
		raw, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return nil, false, fmt.Errorf("encode batch response: %w", err)
		}
		raws[i] = raw
	}
	data, err := json.Marshal(raws)
	return data, false, err
}

// Close implements sdk.Connection: it interrupts a Read waiting for input.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = c.r.Close()
	})
	return c.closeErr
}

// jsonSpace is the white space JSON allows around a value: no other
// character (a no-break space, say) is taken for it.
const jsonSpace = " \t\r\n"
