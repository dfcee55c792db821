package egresstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
)

// NPMPackage is the package NPMRegistryHandler serves, at version 1.0.0.
const NPMPackage = "warden-egress-test"

// NPMRegistryHandler serves one package, NPMPackage 1.0.0, with the npm
// registry's API (the packument and the tarball); base is the registry's
// URL as the client reaches it ("https://npm.test:PORT"), for the tarball
// link. Its index.js exports message.
func NPMRegistryHandler(base, message string) http.Handler {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"` + NPMPackage + `","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = " + jsonString(message) + ";\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	sum1 := sha1.Sum(tgz.Bytes())
	sum512 := sha512.Sum512(tgz.Bytes())
	tarball := base + "/" + NPMPackage + "/-/" + NPMPackage + "-1.0.0.tgz"
	packument, _ := json.Marshal(map[string]any{
		"name":      NPMPackage,
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": NPMPackage, "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{"tarball": tarball, "shasum": hex.EncodeToString(sum1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:])},
		}},
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/"+NPMPackage:
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		case strings.HasSuffix(r.URL.Path, ".tgz") && strings.HasPrefix(r.URL.Path, "/"+NPMPackage+"/-/"):
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
