package egresstest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

// GoModule is the module GoProxyHandler serves.
const (
	GoModule        = "example.test/hello"
	GoModuleVersion = "v1.0.0"
)

// GoProxyHandler serves one module, GoModule at GoModuleVersion, with the
// module proxy protocol (GOPROXY): @v/list, .info, .mod and .zip. Its
// package hello has Greeting() returning greeting.
func GoProxyHandler(greeting string) http.Handler {
	mod := "module " + GoModule + "\n\ngo 1.21\n"
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	prefix := GoModule + "@" + GoModuleVersion + "/"
	for name, body := range map[string]string{
		"go.mod":   mod,
		"hello.go": fmt.Sprintf("package hello\n\n// Greeting says hello.\nfunc Greeting() string { return %q }\n", greeting),
	} {
		f, _ := zw.Create(prefix + name)
		f.Write([]byte(body))
	}
	zw.Close()
	base := "/" + GoModule + "/@v/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, base) {
		case "list":
			fmt.Fprintln(w, GoModuleVersion)
		case GoModuleVersion + ".info":
			fmt.Fprintf(w, `{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, GoModuleVersion)
		case GoModuleVersion + ".mod":
			fmt.Fprint(w, mod)
		case GoModuleVersion + ".zip":
			w.Header().Set("Content-Type", "application/zip")
			w.Write(zbuf.Bytes())
		default:
			http.NotFound(w, r)
		}
	})
}
