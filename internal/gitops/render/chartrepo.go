package render

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// prepareChart validates a render of a chart from a chart repository, already fetched and
// unpacked (internal/gitops/helmrepo) in req.Root/<chart>: it is rendered as a Helm
// directory whose root is req.Root, so value files are relative to the chart and locations
// read "<chart>/templates/x.yaml".
func (r *Renderer) prepareChart(req Request) (*job, error) {
	name := req.Source.Chart
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, newError(ErrInvalidManifest, "", 0, "spec.source.chart %q must be the name of a chart in the repository", name)
	}
	if req.Root == "" {
		return nil, errdefs.Invalid("root", "", "is required: the directory the chart is unpacked in")
	}
	if t := req.Source.ExplicitType(); t != "" && t != app.SourceTypeHelm {
		return nil, newError(ErrInvalidManifest, "", 0, "spec.source.chart %q is a Helm chart; spec.source.%s options do not apply to it", name, t)
	}
	root, err := filepath.EvalSymlinks(req.Root)
	if err != nil {
		return nil, newError(ErrNotFound, "", 0, "chart %s: %v", name, err)
	}
	root, _ = filepath.Abs(root)
	dir := filepath.Join(root, name)
	if fi, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil || !fi.Mode().IsRegular() {
		return nil, newError(ErrNotFound, name, 0, "the fetched chart has no Chart.yaml")
	}
	return &job{r: r, req: req, root: root, dir: dir, srcPath: name, typ: app.SourceTypeHelm,
		budget: &budget{maxFile: r.opts.MaxFileBytes, maxTotal: r.opts.MaxInputBytes}}, nil
}
