package telemetry

import (
	"strings"
	"testing"
)

// FuzzParseHeaders: the header variable never makes a header that could
// split a request, and an error never repeats a value.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"", "a=b", "x-api-key=abc, other=1", "novalue", "=v", "a=b\r\nInjected: 1", "a b=c", "k:=v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHeaders(s)
		if err != nil {
			for _, kv := range strings.Split(s, ",") {
				if _, v, ok := strings.Cut(kv, "="); ok && len(v) > 3 && strings.Contains(err.Error(), v) {
					t.Fatalf("the error %q repeats a value", err)
				}
			}
			return
		}
		for k, v := range h {
			if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.ContainsAny(v, "\r\n") {
				t.Fatalf("header %q: %q", k, v)
			}
		}
	})
}
