// Package chartrepo serves a real Helm chart repository to tests on 127.0.0.1: charts
// packaged by the Helm SDK (chartutil.Save) and an index.yaml listing them with their sha256
// digests, optionally behind basic auth, with per-path request counters so tests can assert
// "one download per version, not one per app". It also takes uploads as ChartMuseum does
// (POST /api/charts), for helm steps' push action.
//
//	repo := chartrepo.New(t, "demo", "1.0.0", "1.2.3")
//	... spec.source: {repoURL: repo.URL, chart: demo, targetRevision: 1.2.*} ...
//	if repo.Hits("/charts/demo-1.2.3.tgz") != 1 { ... }
package chartrepo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	sigsyaml "sigs.k8s.io/yaml"
)

// Repo is a real chart repository served over HTTP on 127.0.0.1: charts packaged by the
// Helm SDK (chartutil.Save) and an index.yaml listing them with their digests.
type Repo struct {
	*httptest.Server
	dir        string
	user, pass string // basic auth required when set
	mu         sync.Mutex
	entries    map[string][]map[string]any
	hits       map[string]*atomic.Int64
	badDigest  atomic.Bool
}

// New starts a repository holding chart name at each version.
func New(t testing.TB, name string, versions ...string) *Repo {
	t.Helper()
	r := &Repo{dir: t.TempDir(), entries: map[string][]map[string]any{}, hits: map[string]*atomic.Int64{}}
	for _, v := range versions {
		r.Add(t, name, v)
	}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Add packages chart name at version and lists it in the index.
func (r *Repo) Add(t testing.TB, name, version string) {
	t.Helper()
	r.index(t, name, version, Package(t, r.dir, name, version))
}

// AddTemplates packages chart name at version with these templates (name under templates/ →
// text) instead of the test chart's, and lists it in the index.
func (r *Repo) AddTemplates(t testing.TB, name, version string, templates map[string]string) {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, AppVersion: version}}
	for n, text := range templates {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/" + n, Data: []byte(text)})
	}
	path, err := chartutil.Save(ch, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	r.index(t, name, version, path)
}

// index lists the archive at path as chart name at version.
func (r *Repo) index(t testing.TB, name, version, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[name] = append(r.entries[name], map[string]any{"apiVersion": "v2", "name": name, "version": version,
		"urls": []string{"charts/" + filepath.Base(path)}, "digest": hex.EncodeToString(sum[:]), "created": "2026-01-01T00:00:00Z"})
}

// Package packages the test chart name at version with the Helm SDK (chartutil.Save) into
// dir and returns the archive's path. The chart renders one ConfigMap, RELEASE-cm, holding
// its version and the values message and replicas (as a dependency of another chart:
// RELEASE-NAME-cm); it carries values-prod.yaml.
func Package(t testing.TB, dir, name, version string, deps ...*chart.Dependency) string {
	t.Helper()
	ch := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, AppVersion: version, Dependencies: deps},
		Values:   map[string]any{"replicas": 1, "message": "hello"},
		// chartutil.Save writes values.yaml from Raw (as `helm package` keeps the file).
		Raw: []*chart.File{{Name: "values.yaml", Data: []byte("replicas: 1\nmessage: hello\n")}},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}{{ if contains "/charts/" .Template.BasePath }}-{{ .Chart.Name }}{{ end }}-cm
data:
  version: {{ .Chart.Version | quote }}
  message: {{ .Values.message | quote }}
  replicas: {{ .Values.replicas | quote }}
`)}},
		Files: []*chart.File{{Name: "values-prod.yaml", Data: []byte("message: from-prod\n")}},
	}
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func (r *Repo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	h := r.hits[req.URL.Path]
	if h == nil {
		h = &atomic.Int64{}
		r.hits[req.URL.Path] = h
	}
	r.mu.Unlock()
	h.Add(1)
	r.mu.Lock()
	user, pass := r.user, r.pass
	r.mu.Unlock()
	if user != "" {
		if u, p, ok := req.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	switch {
	case req.URL.Path == "/index.yaml":
		r.mu.Lock()
		data, _ := sigsyaml.Marshal(map[string]any{"apiVersion": "v1", "entries": r.entries})
		r.mu.Unlock()
		_, _ = w.Write(data)
	case req.URL.Path == "/api/charts" && req.Method == http.MethodPost:
		r.upload(w, req)
	case strings.HasPrefix(req.URL.Path, "/charts/"):
		data, err := os.ReadFile(filepath.Join(r.dir, filepath.Base(req.URL.Path)))
		if err != nil {
			http.NotFound(w, req)
			return
		}
		if r.badDigest.Load() {
			data = append(data, 0)
		}
		_, _ = w.Write(data)
	default:
		http.NotFound(w, req)
	}
}

// Hits is how often path was requested.
func (r *Repo) Hits(path string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.hits[path]; h != nil {
		return h.Load()
	}
	return 0
}

// BadDigest makes the server send archives that do not match the index's digests (on) or
// the right ones (off).
func (r *Repo) BadDigest(on bool) { r.badDigest.Store(on) }

// SetAuth requires basic auth with user and pass ("" for none).
func (r *Repo) SetAuth(user, pass string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.user, r.pass = user, pass
}

// upload takes a chart archive as ChartMuseum's API does (POST /api/charts, the archive as the
// body): 201 when stored and listed, 409 when the version is there already, 400 when the body
// is not a chart archive.
func (r *Repo) upload(w http.ResponseWriter, req *http.Request) {
	data, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusBadRequest)
		return
	}
	name, version := ch.Name(), ch.Metadata.Version
	file := name + "-" + version + ".tgz"
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries[name] {
		if e["version"] == version {
			http.Error(w, `{"error":"file already exists"}`, http.StatusConflict)
			return
		}
	}
	if err := os.WriteFile(filepath.Join(r.dir, file), data, 0o644); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(data)
	r.entries[name] = append(r.entries[name], map[string]any{"apiVersion": "v2", "name": name, "version": version,
		"appVersion": ch.Metadata.AppVersion, "urls": []string{"charts/" + file}, "digest": hex.EncodeToString(sum[:]), "created": "2026-01-01T00:00:00Z"})
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"saved":true}`))
}
