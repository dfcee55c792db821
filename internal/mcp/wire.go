package mcp

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sjson "github.com/segmentio/encoding/json"
)

// maxDepth bounds the nesting of a message, as the SDK's decoder does:
// deeper input is refused before it is parsed.
const maxDepth = 1000

// wireMessage is a JSON-RPC message as it arrives: a request, a
// notification or a response (the SDK's own wire form).
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// decodeMessage decodes one JSON-RPC message as jsonrpc.DecodeMessage does
// (the same parser, segmentio's, with the same flags: field names match
// exactly) without its per-message cost: DecodeMessage reads data through
// a fresh streaming decoder, which allocates a 32 KiB buffer, twice per
// message. Unlike it, data must hold one value and nothing after it.
// The message shares no memory with data.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	if err := checkDepth(data, maxDepth); err != nil {
		return nil, err
	}
	var w wireMessage
	rest, err := sjson.Parse(data, &w, sjson.DontMatchCaseInsensitiveStructFields)
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if len(rest) != 0 {
		return nil, errors.New("unmarshaling jsonrpc message: data after the message")
	}
	if w.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, err
	}
	if len(w.Method) > 0 {
		var method string
		if rest, err := sjson.Parse(w.Method, &method, sjson.DontMatchCaseInsensitiveStructFields); err != nil || len(rest) != 0 {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: method is not a string: %.40s", w.Method)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: w.Params}, nil
	}
	if !id.IsValid() {
		return nil, fmt.Errorf("%w: a message with neither a method nor an id", errInvalidRequest)
	}
	resp := &jsonrpc.Response{ID: id, Result: w.Result}
	if w.Error != nil {
		resp.Error = w.Error
	}
	return resp, nil
}

// errInvalidRequest is JSON-RPC's "Invalid Request".
var errInvalidRequest = errors.New("invalid request")

// checkDepth refuses data nested deeper than max (objects and arrays),
// scanning it once without parsing.
func checkDepth(data []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return fmt.Errorf("unmarshaling jsonrpc message: nested deeper than %d", max)
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
