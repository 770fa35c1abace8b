package webui

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

const (
	testIndex = `<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>`
)

var testJS = "console.log('freshet');\n" + strings.Repeat("export const x = 'padding so that gzip pays';\n", 100)

func builtFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":                {Data: []byte(testIndex)},
		"favicon.svg":               {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)},
		"assets/index-abc123.js":    {Data: []byte(testJS)},
		"assets/index-def456.css":   {Data: []byte("body{color:red}")},
		".gitkeep":                  {Data: nil},
		"assets/font-0a1b2c.woff2":  {Data: []byte("wOF2")},
		"assets/logo-99aa.svg":      {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`)},
		"assets/sub/chunk-77ee.mjs": {Data: []byte("export{}")},
	}
}

// mount puts the handler behind a mux the way internal/server does: API routes first, the UI
// as the "/" fallback.
func mount(t *testing.T, ui http.Handler) http.Handler {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/me", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"user":{}}`)
	})
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":"not_found","message":"api"}}`)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"status":"ok"}`) })
	mux.Handle("/", ui)
	return mux
}

func get(t *testing.T, h http.Handler, method, target string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func newTestHandler(t *testing.T, fsys fstest.MapFS, dev string) http.Handler {
	t.Helper()
	h, err := newHandler(fsys, dev)
	if err != nil {
		t.Fatal(err)
	}
	return mount(t, h)
}

func TestServesAppAndClientRoutes(t *testing.T) {
	h := newTestHandler(t, builtFS(), "")
	for _, target := range []string{"/", "/index.html", "/users", "/audit?action=user.*&since=24h", "/applications/my-app/tree", "/settings/"} {
		rec := get(t, h, http.MethodGet, target, nil)
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200", target, rec.Code)
			continue
		}
		if got := rec.Header().Get("Content-Type"); got != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", target, got)
		}
		if got := rec.Header().Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache (index.html must revalidate)", target, got)
		}
		if !strings.Contains(rec.Body.String(), `<div id="root">`) {
			t.Errorf("GET %s: body is not index.html: %q", target, rec.Body.String())
		}
	}
}

func TestAssetsAreImmutableWithTheirContentType(t *testing.T) {
	h := newTestHandler(t, builtFS(), "")
	cases := []struct{ path, ctype, cache string }{
		{"/assets/index-abc123.js", "text/javascript; charset=utf-8", immutableCache},
		{"/assets/index-def456.css", "text/css; charset=utf-8", immutableCache},
		{"/assets/font-0a1b2c.woff2", "font/woff2", immutableCache},
		{"/assets/logo-99aa.svg", "image/svg+xml", immutableCache},
		{"/assets/sub/chunk-77ee.mjs", "text/javascript; charset=utf-8", immutableCache},
		{"/favicon.svg", "image/svg+xml", revalidateCache},
	}
	for _, c := range cases {
		rec := get(t, h, http.MethodGet, c.path, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: status %d", c.path, rec.Code)
		}
		if got := rec.Header().Get("Content-Type"); got != c.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.ctype)
		}
		if got := rec.Header().Get("Cache-Control"); got != c.cache {
			t.Errorf("GET %s: Cache-Control %q, want %q", c.path, got, c.cache)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
	}
}

func TestMissingAssetIsNotTheApp(t *testing.T) {
	h := newTestHandler(t, builtFS(), "")
	for _, target := range []string{"/assets/index-old999.js", "/robots.txt", "/.gitkeep", "/assets/.secret"} {
		rec := get(t, h, http.MethodGet, target, nil)
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, rec.Code)
		}
		if strings.Contains(rec.Body.String(), "<div id=\"root\">") {
			t.Errorf("GET %s: answered with index.html", target)
		}
	}
}

func TestAPIPathsAreNotSwallowed(t *testing.T) {
	h := newTestHandler(t, builtFS(), "")
	// Routes the API owns still reach it.
	if rec := get(t, h, http.MethodGet, "/api/v1/me", nil); rec.Code != 200 || rec.Body.String() != `{"user":{}}` {
		t.Fatalf("GET /api/v1/me: %d %q", rec.Code, rec.Body.String())
	}
	if rec := get(t, h, http.MethodGet, "/healthz", nil); rec.Body.String() != `{"status":"ok"}` {
		t.Fatalf("GET /healthz: %q", rec.Body.String())
	}
	// Paths under the reserved roots that no API route takes are JSON 404s, never index.html.
	for _, c := range []struct{ method, target string }{
		{"GET", "/api"}, {"GET", "/api/"}, {"GET", "/api/v2/users"}, {"GET", "/api/graphql/x"},
		{"POST", "/api/nothing"}, {"GET", "/healthz/x"}, {"POST", "/healthz"}, {"GET", "/readyz"},
		{"GET", "/metrics"}, {"HEAD", "/metrics/x"},
	} {
		rec := get(t, h, c.method, c.target, nil)
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: status %d, want 404", c.method, c.target, rec.Code)
			continue
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", c.method, c.target, ct)
		}
		if c.method == "HEAD" {
			continue
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != "not_found" || body.Error.Message == "" {
			t.Errorf("%s %s: body %q is not the API error shape (%v)", c.method, c.target, rec.Body.String(), err)
		}
	}
	// Words that merely start like a reserved root are app routes.
	if rec := get(t, h, http.MethodGet, "/apikeys", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), "root") {
		t.Errorf("GET /apikeys: %d, want the app", rec.Code)
	}
}

func TestOnlyGetAndHead(t *testing.T) {
	h := newTestHandler(t, builtFS(), "")
	rec := get(t, h, http.MethodPost, "/users", nil)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST /users: %d Allow=%q", rec.Code, rec.Header().Get("Allow"))
	}
	rec = get(t, h, http.MethodHead, "/users", nil)
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "" {
		t.Fatalf("HEAD /users: %d body=%d Content-Length=%q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}
}

func TestGzipAndConditionalRequests(t *testing.T) {
	h := newTestHandler(t, builtFS(), "")
	rec := get(t, h, http.MethodGet, "/assets/index-abc123.js", map[string]string{"Accept-Encoding": "br, gzip;q=0.9"})
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("JS was not gzipped; headers %v", rec.Header())
	}
	if !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
		t.Errorf("Vary = %q", rec.Header().Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if string(plain) != testJS {
		t.Fatalf("gunzipped body differs")
	}
	if rec.Body.Len() >= len(testJS) {
		t.Errorf("gzipped %d bytes >= plain %d", rec.Body.Len(), len(testJS))
	}
	gzTag := rec.Header().Get("ETag")

	plainRec := get(t, h, http.MethodGet, "/assets/index-abc123.js", map[string]string{"Accept-Encoding": "gzip;q=0"})
	if plainRec.Header().Get("Content-Encoding") != "" || plainRec.Body.String() != testJS {
		t.Fatalf("q=0 still got gzip")
	}
	if plainRec.Header().Get("ETag") == gzTag || gzTag == "" {
		t.Errorf("gzip and identity share ETag %q", gzTag)
	}
	// Small files are not worth compressing.
	if rec := get(t, h, http.MethodGet, "/assets/index-def456.css", map[string]string{"Accept-Encoding": "gzip"}); rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("tiny CSS was gzipped")
	}
	// Revalidation answers 304 without a body.
	nm := get(t, h, http.MethodGet, "/assets/index-abc123.js", map[string]string{"Accept-Encoding": "gzip", "If-None-Match": gzTag})
	if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 {
		t.Errorf("If-None-Match: %d with %d bytes", nm.Code, nm.Body.Len())
	}
}

func TestNotBuiltPage(t *testing.T) {
	h := newTestHandler(t, fstest.MapFS{".gitkeep": {Data: nil}}, "")
	rec := get(t, h, http.MethodGet, "/users", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "make web") {
		t.Fatalf("GET /users without a build: %d %q", rec.Code, rec.Body.String())
	}
	if rec := get(t, h, http.MethodGet, "/api/v9", nil); rec.Code != http.StatusNotFound {
		t.Errorf("GET /api/v9 without a build: %d", rec.Code)
	}
}

func TestDevProxy(t *testing.T) {
	vite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "vite:"+r.URL.Path)
	}))
	defer vite.Close()
	h := newTestHandler(t, builtFS(), vite.URL)
	if rec := get(t, h, http.MethodGet, "/src/main.tsx", nil); rec.Body.String() != "vite:/src/main.tsx" {
		t.Fatalf("dev proxy: %q", rec.Body.String())
	}
	if rec := get(t, h, http.MethodGet, "/api/v2/x", nil); rec.Code != http.StatusNotFound || strings.HasPrefix(rec.Body.String(), "vite:") {
		t.Fatalf("dev proxy took an API path: %d %q", rec.Code, rec.Body.String())
	}
	vite.Close()
	if rec := get(t, h, http.MethodGet, "/", nil); rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "make web-dev") {
		t.Fatalf("dev server down: %d %q", rec.Code, rec.Body.String())
	}
	if _, err := newHandler(builtFS(), "localhost:5173"); err == nil {
		t.Fatal("a dev URL without a scheme was accepted")
	}
}

// The embedded build, whatever state it is in, serves something useful at "/".
func TestHandlerEmbedded(t *testing.T) {
	t.Setenv(DevEnv, "")
	h := mount(t, Handler())
	rec := get(t, h, http.MethodGet, "/", nil)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	if rec := get(t, h, http.MethodGet, "/api/nope", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("GET /api/nope: %d", rec.Code)
	}
}
