package jailworker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The egress variables are set over whatever environment a request brings:
// a command cannot be given another proxy, nor the real value of a
// brokered secret in its placeholder's place.
func TestFixedEnv(t *testing.T) {
	t.Parallel()
	s := &Server{Env: []string{"PATH=/bin", "LANG=C"}, Fixed: []string{"HTTPS_PROXY=http://127.0.0.1:3128", "GH_TOKEN=warden-placeholder-x"}}
	for _, c := range []struct {
		req, want []string
	}{
		{nil, []string{"PATH=/bin", "LANG=C", "HTTPS_PROXY=http://127.0.0.1:3128", "GH_TOKEN=warden-placeholder-x"}},
		{[]string{"HTTPS_PROXY=http://evil:1", "GH_TOKEN=ghp_real", "A=1"}, []string{"A=1", "HTTPS_PROXY=http://127.0.0.1:3128", "GH_TOKEN=warden-placeholder-x"}},
	} {
		if diff := cmp.Diff(c.want, s.env(c.req)); diff != "" {
			t.Errorf("env(%q) (-want +got):\n%s", c.req, diff)
		}
	}
	plain := &Server{Env: []string{"PATH=/bin"}}
	if diff := cmp.Diff([]string{"X=1"}, plain.env([]string{"X=1"})); diff != "" {
		t.Errorf("without egress: %s", diff)
	}
}
