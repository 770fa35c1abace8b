package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gobwas/glob"
	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/appset"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// GitSourcesDir holds the runtime's Git Sources in its installation repository.
const GitSourcesDir = "git-sources"

// GitSource kinds.
const (
	GitSourceAPIVersion = "freshet.dev/v1"
	GitSourceKind       = "GitSource"
)

// GitSource is a directory of another repository whose Applications (and AppProjects) the
// runtime loads, as if they were in its installation repository: app-of-apps.
type GitSource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec GitSourceSpec `json:"spec"`
}

// GitSourceSpec says where the applications are.
type GitSourceSpec struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// Include and Exclude are globs over file paths relative to Path (as directory apps').
	Include string `json:"include,omitempty"`
	Exclude string `json:"exclude,omitempty"`
	// Destination is given to the source's applications that name none.
	Destination app.Destination `json:"destination,omitzero"`
}

// Validate names the first bad field.
func (g *GitSource) Validate() error {
	switch {
	case g.APIVersion != GitSourceAPIVersion:
		return errdefs.Invalid("apiVersion", g.APIVersion, "must be "+GitSourceAPIVersion)
	case g.Kind != GitSourceKind:
		return errdefs.Invalid("kind", g.Kind, "must be "+GitSourceKind)
	case !clusterName.MatchString(g.Metadata.Name):
		return errdefs.Invalid("metadata.name", g.Metadata.Name, "is not a name (lowercase letters, digits and '-', at most 63)")
	case g.Spec.RepoURL == "":
		return errdefs.Invalid("spec.repoURL", "", "is required")
	}
	if _, err := repourl.Normalize(g.Spec.RepoURL); err != nil {
		return errdefs.Invalid("spec.repoURL", g.Spec.RepoURL, err.Error())
	}
	p := path.Clean("/" + g.Spec.Path)
	if strings.Contains(g.Spec.Path, "..") && p != "/"+strings.Trim(g.Spec.Path, "/") {
		return errdefs.Invalid("spec.path", g.Spec.Path, "must stay inside the repository")
	}
	for field, v := range map[string]string{"spec.include": g.Spec.Include, "spec.exclude": g.Spec.Exclude} {
		if v != "" {
			if _, err := glob.Compile(v); err != nil {
				return errdefs.Invalid(field, v, "is not a valid glob: "+err.Error())
			}
		}
	}
	if g.Spec.Destination.Server != "" && g.Spec.Destination.Name != "" {
		return errdefs.Invalid("spec.destination", g.Spec.Destination.Server+" / "+g.Spec.Destination.Name, "give server or name, not both")
	}
	return nil
}

// decodeGitSource reads a GitSource strictly (unknown fields are errors).
func decodeGitSource(data []byte) (*GitSource, error) {
	var g GitSource
	if err := yaml.UnmarshalStrict(data, &g); err != nil {
		return nil, errdefs.Invalid("gitSource", "", err.Error())
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &g, nil
}

func (g *GitSource) dir() string { return strings.Trim(path.Clean("/"+g.Spec.Path), "/") }

func gitSourceFile(name string) string { return GitSourcesDir + "/" + name + ".yaml" }

// readGitSources decodes git-sources/ of the installation repository.
func readGitSources(root string) (map[string]*GitSource, []string) {
	out := map[string]*GitSource{}
	var errs []string
	for _, f := range yamlFiles(root, GitSourcesDir) {
		data, err := readFile(root, f)
		if err == nil {
			var g *GitSource
			if g, err = decodeGitSource(data); err == nil {
				out[g.Metadata.Name] = g
				continue
			}
		}
		errs = append(errs, fmt.Sprintf("%s: %v", f, err))
	}
	return out, errs
}

// loadGitSource reads one Git Source's applications. Files that are neither Applications nor
// AppProjects are reported, not deployed: a Git Source holds applications.
func (h *Host) loadGitSource(ctx context.Context, g *GitSource, sets map[string]loadedSet) (map[string]loadedApp, map[string]*app.AppProject, []string, error) {
	repo := git.Repo{URL: g.Spec.RepoURL, Credentials: h.credentials(g.Spec.RepoURL)}
	snap, err := h.cache.Checkout(ctx, repo, g.Spec.TargetRevision)
	if err != nil {
		return nil, nil, nil, err
	}
	defer snap.Release()
	var include, exclude glob.Glob
	if g.Spec.Include != "" {
		include = glob.MustCompile(g.Spec.Include)
	}
	if g.Spec.Exclude != "" {
		exclude = glob.MustCompile(g.Spec.Exclude)
	}
	apps := map[string]loadedApp{}
	projects := map[string]*app.AppProject{}
	var errs []string
	dir := g.dir()
	isRendered := rendered(snap.Dir, dir)
	h.mu.Lock()
	if h.renderedSources == nil {
		h.renderedSources = map[string]bool{}
	}
	h.renderedSources[g.Metadata.Name] = isRendered
	h.mu.Unlock()
	if isRendered {
		return h.loadRenderedSource(ctx, g, snap, sets)
	}
	for _, f := range yamlFiles(snap.Dir, dir) {
		rel := strings.TrimPrefix(strings.TrimPrefix(f, dir), "/")
		if (include != nil && !include.Match(rel)) || (exclude != nil && exclude.Match(rel)) {
			continue
		}
		at := "git-source " + g.Metadata.Name + ": " + f
		data, err := readFile(snap.Dir, f)
		if err == nil {
			data = withDestination(data, g.Spec.Destination)
		}
		var docs []app.Document
		if err == nil {
			docs, err = app.DecodeAll(data)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", f, err)
			errs = append(errs, "git-source "+g.Metadata.Name+": "+err.Error())
			continue
		}
		for _, d := range docs {
			switch {
			case d.Application != nil:
				a := d.Application
				apps[a.Metadata.Name] = loadedApp{app: a, file: at, source: g.Metadata.Name, path: f}
			case d.AppProject != nil:
				projects[d.AppProject.Metadata.Name] = d.AppProject
			case d.ApplicationSet != nil:
				set, err := appset.DecodeNode(d.ApplicationSet, d.Line)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", at, err))
					continue
				}
				addSet(sets, loadedSet{set: set, file: at, source: g.Metadata.Name}, &errs)
			}
		}
	}
	return apps, projects, errs, nil
}

// rendered reports whether a Git Source's directory is a Helm chart or a Kustomization: its
// Applications are what it renders (as an app-of-apps parent's would be).
func rendered(root, dir string) bool {
	for _, f := range []string{"Chart.yaml", "kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir), f)); err == nil {
			return true
		}
	}
	return false
}

// loadRenderedSource renders a Git Source's Helm chart or Kustomization (release name: the
// source's name; namespace: its destination's) and loads the Applications and AppProjects it
// renders; other kinds are reported and ignored. A render error is the source's error: its
// applications stay as they were.
func (h *Host) loadRenderedSource(ctx context.Context, g *GitSource, snap *git.Snapshot, sets map[string]loadedSet) (map[string]loadedApp, map[string]*app.AppProject, []string, error) {
	res, err := h.renderer.Render(ctx, render.Request{Root: snap.Dir, Source: app.Source{RepoURL: g.Spec.RepoURL, Path: g.dir()},
		AppName: g.Metadata.Name, Namespace: g.Spec.Destination.Namespace, Revision: snap.SHA})
	if err != nil {
		return nil, nil, nil, err
	}
	apps := map[string]loadedApp{}
	projects := map[string]*app.AppProject{}
	var errs []string
	for _, o := range res.Objects {
		at := fmt.Sprintf("git-source %s: %s", g.Metadata.Name, o.Source)
		gvk := o.Object.GroupVersionKind()
		if gvk.Group != engine.ArgoGroup || (gvk.Kind != app.KindApp && gvk.Kind != app.KindAppProject && gvk.Kind != app.KindApplicationSet) {
			errs = append(errs, fmt.Sprintf("%s: %s %s is not an Application, AppProject or ApplicationSet; ignored (deploy it through an application's path)", at, gvk.Kind, o.Object.GetName()))
			continue
		}
		data, err := json.Marshal(o.Object.Object)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", at, err))
			continue
		}
		if gvk.Kind == app.KindApplicationSet {
			set, err := appset.Decode(data)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", at, err))
				continue
			}
			addSet(sets, loadedSet{set: set, file: at, source: g.Metadata.Name}, &errs)
			continue
		}
		if gvk.Kind == app.KindAppProject {
			p, err := app.DecodeAppProject(data)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", at, err))
				continue
			}
			projects[p.Metadata.Name] = p
			continue
		}
		a, err := app.DecodeApplication(withDestination(data, g.Spec.Destination))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", at, err))
			continue
		}
		apps[a.Metadata.Name] = loadedApp{app: a, file: at, source: g.Metadata.Name, path: o.Source.File}
	}
	return apps, projects, errs, nil
}

// credentials for a repository: the installation repository's for itself, else the
// configured ones, else the runtime's repository credentials.
func (h *Host) credentials(u string) git.Credentials {
	if h.opts.InstallRepo.URL != "" && sameRepo(u, h.opts.InstallRepo.URL) {
		return h.opts.InstallRepo.Credentials
	}
	if h.opts.Credentials != nil {
		return h.opts.Credentials(u)
	}
	c, _ := h.repoCreds.Load().Lookup(u)
	return c
}

// GitSources returns the loaded Git Sources, by name.
func (h *Host) GitSources() []*GitSource {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*GitSource, 0, len(h.sources))
	for _, g := range h.sources {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Metadata.Name < out[j].Metadata.Name })
	return out
}

// sourcePath is where an application of a Git Source is written: <path>/<name>.yaml.
func (g *GitSource) sourcePath(name string) string {
	if d := g.dir(); d != "" {
		return d + "/" + name + ".yaml"
	}
	return name + ".yaml"
}

// withDestination gives the Applications in data that name no destination the Git Source's
// default one. Files that need none are returned as they are (error lines stay exact); the
// others are re-encoded.
func withDestination(data []byte, dest app.Destination) []byte {
	if dest == (app.Destination{}) || len(data) > maxBody {
		return data // nothing to fill in, or too large for the decoder anyway (it says so)
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var docs []*yamlv3.Node
	changed := false
	for {
		var n yamlv3.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return data // the decoder reports it properly
		}
		if root := mapping(&n); root != nil && scalar(root, "kind") == app.KindApp {
			if spec := child(root, "spec"); spec != nil && spec.Kind == yamlv3.MappingNode && child(spec, "destination") == nil {
				var d yamlv3.Node
				if err := d.Encode(dest); err == nil {
					spec.Content = append(spec.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Value: "destination"}, &d)
					changed = true
				}
			}
		}
		docs = append(docs, &n)
	}
	if !changed {
		return data
	}
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return data
		}
	}
	_ = enc.Close()
	return buf.Bytes()
}

func mapping(doc *yamlv3.Node) *yamlv3.Node {
	if doc.Kind == yamlv3.DocumentNode && len(doc.Content) == 1 && doc.Content[0].Kind == yamlv3.MappingNode {
		return doc.Content[0]
	}
	return nil
}

func child(m *yamlv3.Node, key string) *yamlv3.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yamlv3.Node, key string) string {
	if c := child(m, key); c != nil && c.Kind == yamlv3.ScalarNode {
		return c.Value
	}
	return ""
}
