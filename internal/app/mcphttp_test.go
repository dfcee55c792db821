package app

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/internal/config"
)

func TestMCPHandlerNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := Options{Config: config.Default(), DB: filepath.Join(dir, "warden.db")}
	for _, c := range []struct {
		ws   []MCPWorkspace
		want string
	}{
		{[]MCPWorkspace{{"a/b", dir}}, `--mcp-workspace "a/b=` + dir + `": NAME must be`},
		{[]MCPWorkspace{{"ws", dir}, {"ws", dir}}, "--mcp-workspace ws: the name is used twice"},
	} {
		_, _, err := MCPHandler(t.Context(), base, c.ws, nil)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.ws, err, c.want)
		}
	}
}

// Without a client token every MCP request is refused (401), whether the
// workspace is served or not.
func TestMCPHandlerRefuses(t *testing.T) {
	dir := t.TempDir()
	base := Options{Config: config.Default(), DB: filepath.Join(dir, "warden.db")}
	st, err := OpenStore(base.DB, config.Store{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, closeB, err := DecidingBroker(t.Context(), base.Config, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeB()
	h, closeH, err := MCPHandler(t.Context(), base, []MCPWorkspace{{"ws", dir}}, b)
	if err != nil {
		t.Fatal(err)
	}
	defer closeH()
	for _, path := range []string{"/mcp/ws", "/mcp/other"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`)))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}
