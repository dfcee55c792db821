package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Canonical returns args as canonical JSON: object keys sorted, no
// insignificant space, no HTML escaping, numbers as written. A duplicated
// key keeps its last value, and that is what is stored, shown, approved and
// run: there is one reading of the arguments from here on.
func Canonical(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("arguments are not valid JSON: data after the value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("failed to encode arguments: %w", err)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// BindingHash is the SHA-256 (hex) that binds a decision to exactly what
// will run: the tool, its canonical arguments, the workspace, the session
// and, for a call that changes files, where each change lands (targets),
// each length-prefixed.
func BindingHash(tool string, canonicalArgs json.RawMessage, workspace, session string, targets ...Target) string {
	h := sha256.New()
	fields := []string{tool, string(canonicalArgs), workspace, session}
	for _, t := range targets {
		fields = append(fields, "target", t.Path, t.Real)
	}
	for _, f := range fields {
		h.Write([]byte(strconv.Itoa(len(f))))
		h.Write([]byte{':'})
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}
