package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// JSONLines writes records as JSON lines to w, one write per record so
// concurrent appenders never interleave inside a line.
type JSONLines struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// NewJSONLines writes to w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// OpenFile appends to the file at path, creating it (mode 0600).
func OpenFile(path string) (*JSONLines, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &JSONLines{w: f, c: f}, nil
}

// Write implements Sink.
func (j *JSONLines) Write(_ context.Context, rec *Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode audit record: %w", err)
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.w.Write(b); err != nil {
		return fmt.Errorf("write audit record: %w", err)
	}
	return nil
}

// Close closes the underlying file, if JSONLines opened it.
func (j *JSONLines) Close() error {
	if j.c == nil {
		return nil
	}
	return j.c.Close()
}
