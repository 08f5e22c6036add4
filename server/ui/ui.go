// Package ui is ebb's dashboard: one HTML page, a style sheet and a plain
// script, embedded in the binary so that the page renders where there is no
// network but the server's own.
//
// The files hold no data. The page reads the HTTP API from the browser with
// the token the operator types (kept in the tab's session storage), so it
// shows exactly what that token's scopes allow, and the server serves the
// files themselves without authentication.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// files is the embedded tree with the static/ prefix removed.
var files = func() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("ui: embedded files: " + err.Error()) // a build mistake, not a runtime condition
	}
	return sub
}()

// Files returns the dashboard's files: index.html, app.js and style.css.
func Files() fs.FS { return files }

// securityHeaders are sent with every file. The policy allows the page to
// load only its own files and to talk only to its own origin, so that no
// browser running it reaches out to the network, and no other site frames
// it.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	// A new binary may bring new files under the same names: the browser
	// revalidates each time (the files are a few kilobytes).
	"Cache-Control": "no-cache",
}

// Handler serves the files under prefix (which ends in "/"): prefix itself
// is index.html, prefix+"app.js" is app.js. A request for any other path is
// handed to notFound, so that the caller answers it as it answers every
// other unknown path.
func Handler(prefix string, notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok {
			notFound.ServeHTTP(w, r)
			return
		}
		if name == "" {
			name = "index.html"
		}
		// Only the flat files of the page exist: no directories, no
		// listings, nothing outside the tree.
		if strings.Contains(name, "/") || !fs.ValidPath(name) {
			notFound.ServeHTTP(w, r)
			return
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		for k, v := range securityHeaders {
			h.Set(k, v)
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		h.Set("Content-Type", ctype)
		h.Set("ETag", etags[name])
		// ServeContent answers If-None-Match with 304 and HEAD without a
		// body.
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	})
}

// etags holds a strong validator per file, from its content.
var etags = func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[name] = `"` + hex.EncodeToString(sum[:8]) + `"`
		return nil
	})
	return out
}()
