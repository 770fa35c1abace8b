// Package webui serves the web UI: the React app built from web/ into dist/ and embedded in
// the binary. Hashed assets are cached for a year as immutable, every client-side route gets
// index.html, text is gzipped once and kept in memory, and paths that belong to the APIs or to
// operations (/api/, /healthz, /readyz, /metrics) are never answered with the app. When the UI
// was not built, a short page says how to build it; when FRESHET_WEBUI_DEV names a URL (the
// Vite dev server), requests for the UI are proxied there instead.
package webui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

//go:embed all:dist
var embedded embed.FS

// DevEnv names the environment variable that, set to the Vite dev server's URL, makes Handler
// proxy UI requests there (see docs/webui.md).
const DevEnv = "FRESHET_WEBUI_DEV"

const (
	// immutableCache is sent with hashed assets (under assets/): their names change with their content.
	immutableCache = "public, max-age=31536000, immutable"
	// revalidateCache is sent with index.html and other unhashed files.
	revalidateCache = "no-cache"
	// minGzipSize is the smallest body worth compressing.
	minGzipSize = 1024
	// indexFile is the app's entry document.
	indexFile = "index.html"
)

// reservedRoots are paths (with everything below them) that the app never answers with
// index.html: they belong to the APIs and the operations endpoints, and a request for them that
// reaches this handler is a JSON 404 in the APIs' error shape.
var reservedRoots = []string{"/api", "/healthz", "/readyz", "/metrics"}

// contentTypes are set explicitly: the system MIME tables differ between machines.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".jpg":         "image/jpeg",
	".ico":         "image/x-icon",
	".webp":        "image/webp",
	".woff2":       "font/woff2",
	".woff":        "font/woff",
	".txt":         "text/plain; charset=utf-8",
	".wasm":        "application/wasm",
}

// Handler serves the embedded UI, or proxies to the dev server named by FRESHET_WEBUI_DEV.
// Mount it as the "/" fallback of the server's mux.
func Handler() http.Handler {
	dist, err := fs.Sub(embedded, "dist")
	if err != nil {
		panic(err) // the embed directive guarantees dist exists
	}
	h, err := newHandler(dist, os.Getenv(DevEnv))
	if err != nil {
		// A bad dev URL is a developer's typo: say so on every page rather than failing start-up.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
	return h
}

// newHandler serves the app in dist, or proxies to devURL when it is set.
func newHandler(dist fs.FS, devURL string) (http.Handler, error) {
	var ui http.Handler
	switch {
	case devURL != "":
		u, err := url.Parse(devURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s=%q is not a URL: set it to the Vite dev server, like http://127.0.0.1:5173", DevEnv, devURL)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.ErrorLog = log.New(os.Stderr, "webui dev proxy: ", 0)
		p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "%s=%s: the Vite dev server does not answer (%v).\nStart it with: make web-dev\n", DevEnv, devURL, err)
		}
		ui = p
	case fileExists(dist, indexFile):
		ui = &static{dist: dist}
	default:
		ui = http.HandlerFunc(serveNotBuilt)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reserved(r.URL.Path) {
			writeJSONError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the web UI answers GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		ui.ServeHTTP(w, r)
	}), nil
}

func reserved(p string) bool {
	for _, root := range reservedRoots {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// writeJSONError answers in the APIs' one error shape. The request id is the one the server's
// middleware already put on the response, if any.
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	errdefs.WriteJSON(w, status, errdefs.Body{Error: errdefs.Detail{Code: code, Message: msg, RequestID: w.Header().Get("X-Request-Id")}})
}

func fileExists(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && !st.IsDir()
}

// static serves the built app from dist.
type static struct {
	dist  fs.FS
	mu    sync.Mutex
	cache map[string]*asset
}

// asset is one file, read once, with its gzipped form when that is smaller.
type asset struct {
	body   []byte
	gz     []byte
	etag   string
	ctype  string
	hashed bool
}

func (s *static) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" || name == "." {
		name = indexFile
	}
	if hidden(name) {
		http.NotFound(w, r)
		return
	}
	a, err := s.load(name)
	if err != nil {
		// A path that looks like a file (has an extension) and is missing is a 404: answering
		// index.html there would hand HTML to a <script> after a deploy. Everything else is a
		// client-side route.
		if path.Ext(name) != "" {
			http.NotFound(w, r)
			return
		}
		if a, err = s.load(indexFile); err != nil {
			http.Error(w, "web UI: index.html is missing from the build", http.StatusInternalServerError)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	if a.hashed {
		h.Set("Cache-Control", immutableCache)
	} else {
		h.Set("Cache-Control", revalidateCache)
	}
	if a.ctype == contentTypes[".html"] {
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
	}
	body := a.body
	etag := a.etag
	if a.gz != nil {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			body = a.gz
			etag = a.etag[:len(a.etag)-1] + `-gz"`
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// load reads name from dist once and keeps it, gzipped when that pays.
func (s *static) load(name string) (*asset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.cache[name]; ok {
		return a, nil
	}
	body, err := fs.ReadFile(s.dist, name)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	a := &asset{
		body:   body,
		etag:   `"` + hex.EncodeToString(sum[:12]) + `"`,
		ctype:  contentType(name),
		hashed: strings.HasPrefix(name, "assets/"),
	}
	if len(body) >= minGzipSize && compressible(a.ctype) {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		if buf.Len() < len(body) {
			a.gz = buf.Bytes()
		}
	}
	if s.cache == nil {
		s.cache = map[string]*asset{}
	}
	s.cache[name] = a
	return a, nil
}

func contentType(name string) string {
	if ct, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		return ct
	}
	return "application/octet-stream"
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.HasPrefix(ctype, "application/json") ||
		strings.HasPrefix(ctype, "application/manifest+json") || strings.HasPrefix(ctype, "image/svg+xml") ||
		strings.HasPrefix(ctype, "application/wasm")
}

// hidden reports whether a path names a dotfile (dist/.gitkeep and the like), never served.
func hidden(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// notBuiltPage is served when the binary was built without the UI.
const notBuiltPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Freshet — web UI not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2328;background:#fff}
@media (prefers-color-scheme:dark){body{color:#e6edf3;background:#0d1117}code,pre{background:#161b22!important}}
code,pre{background:#f3f4f6;border-radius:4px;padding:.1em .3em}pre{padding:.75rem}a{color:#2f81f7}</style></head>
<body><h1>The web UI is not built into this binary</h1>
<p>This <code>freshet</code> was compiled before the UI was built, so there is no app to serve here.
The APIs work: <a href="/api/v1/docs">REST API docs</a>, <code>/api/graphql</code>.</p>
<p>To build the UI into the binary, from the repository root:</p>
<pre>make web     # builds web/ into internal/webui/dist
make build   # compiles bin/freshet with the UI embedded</pre>
<p>While working on the UI, run the Vite dev server instead (<code>make web-dev</code>) and see <code>docs/webui.md</code>.</p>
</body></html>
`

func serveNotBuilt(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(notBuiltPage)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write([]byte(notBuiltPage))
	}
}
