// Package helmchart loads Freshet's embedded Helm charts (package charts) and renders them
// with the Helm SDK the way `helm template` does: values checked against the chart's
// values.schema.json, then the templates. The runtime and runner installers apply what it
// renders, so the CLI and `helm install` put the same objects in a cluster. It also packages
// the charts and pushes them to an OCI registry (`make chart`).
package helmchart

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Object is one rendered Kubernetes object as a generic map.
type Object = map[string]any

// Release names the release a chart is rendered for: its name and namespace.
type Release struct {
	Name      string
	Namespace string
}

// Names are the embedded charts, in the order `make chart` publishes them.
var Names = []string{charts.Freshet, charts.Runtime, charts.Runner}

// Load returns the embedded chart name (one of Names).
func Load(name string) (*chart.Chart, error) {
	return LoadFS(charts.FS, name)
}

// LoadFS loads the chart in directory dir of fsys.
func LoadFS(fsys fs.FS, dir string) (*chart.Chart, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: strings.TrimPrefix(p, dir+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("chart %s: %w", dir, errdefs.ErrNotFound)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	return ch, nil
}

// SetFile replaces the content of the chart's file name (under files/, as .Files.Get reads
// it), or adds it.
func SetFile(ch *chart.Chart, name string, data []byte) {
	for _, f := range ch.Files {
		if f.Name == name {
			f.Data = data
			return
		}
	}
	ch.Files = append(ch.Files, &chart.File{Name: name, Data: data})
}

// Manifest renders ch for rel with values (merged over the chart's values.yaml and checked
// against its values.schema.json) and returns the templates' output as one YAML stream,
// templates in the order of their file names, like `helm template`.
func Manifest(ch *chart.Chart, rel Release, values map[string]any) ([]byte, error) {
	if values == nil {
		values = map[string]any{}
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{
		Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		// The schema's verdict names the value: "server: Does not match pattern …".
		return nil, fmt.Errorf("chart %s: %w: %w", ch.Name(), errdefs.ErrInvalid, errors.New(strings.TrimSpace(err.Error())))
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w: %w", ch.Name(), errdefs.ErrInvalid, err)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") || strings.HasSuffix(base, ".txt") || strings.Contains(n, "/tests/") {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, n := range names {
		for _, doc := range splitDocs(out[n]) {
			fmt.Fprintf(&buf, "---\n# Source: %s\n%s\n", n, doc)
		}
	}
	return buf.Bytes(), nil
}

// Render is Manifest decoded: the objects in order, empty documents left out.
func Render(ch *chart.Chart, rel Release, values map[string]any) ([]Object, error) {
	m, err := Manifest(ch, rel, values)
	if err != nil {
		return nil, err
	}
	return Decode(m)
}

// Decode splits a YAML stream into its objects, empty documents left out.
func Decode(stream []byte) ([]Object, error) {
	var objs []Object
	for i, doc := range splitDocs(string(stream)) {
		var o Object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("rendered document %d: %w", i, err)
		}
		if len(o) == 0 {
			continue
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// splitDocs splits a YAML stream at its "---" lines and drops documents that hold only
// comments and blank lines.
func splitDocs(s string) []string {
	var docs []string
	var cur []string
	flush := func() {
		doc := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		for _, l := range strings.Split(doc, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, doc)
				return
			}
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimRight(l, " \t") == "---" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return docs
}

// loadArchive loads a packaged chart (.tgz).
func loadArchive(data []byte) (*chart.Chart, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("chart archive: %w", err)
	}
	return ch, nil
}
