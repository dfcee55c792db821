package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaFor derives a tool's argument schema from its Go argument struct:
// fields tagged omitempty are optional, every other one required, and extra
// fields are refused. The jsonschema tag is the field's description.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("tool schema: %v", err)) // a programming error in a tool's args type
	}
	return s
}

// decodeArgs decodes raw into a T, refusing unknown fields and trailing
// data, so a tool sees exactly what the schema allowed.
func decodeArgs[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("invalid arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return v, fmt.Errorf("invalid arguments: trailing data after the JSON object")
	}
	return v, nil
}
