package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/wardenhq/warden/internal/config"
	"github.com/wardenhq/warden/internal/tools"
)

func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	return s
}

// A tool whose schema does not resolve is refused when called, naming the
// bug; the other tools of the engine are not affected.
func TestBadSchemaRefusedAtCall(t *testing.T) {
	t.Parallel()
	bad := &tools.Tool{Name: "broken", Group: tools.GroupFSRead, Schema: &jsonschema.Schema{Ref: "#/nowhere"},
		Run: func(context.Context, *tools.Env, json.RawMessage) (string, error) { return "ran", nil }}
	f := newFixture(t, func(c *config.Config) { c.Security.ConfirmMode = config.ModeYolo }, func(o *Options) { o.Registry.Add(bad) })
	res := f.eng.Call(t.Context(), "broken", json.RawMessage(`{}`))
	if res.Success || !strings.Contains(res.Error, "bad schema") {
		t.Fatalf("got %+v", res)
	}
	if res := f.eng.Call(t.Context(), "list_files", json.RawMessage(`{}`)); !res.Success {
		t.Fatalf("list_files: %+v", res)
	}
}
