package host

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/workflows"
)

// DefaultTemplatesDir is where CommitWorkflowTemplate writes templates in a Git Source's
// repository unless told otherwise.
const DefaultTemplatesDir = "workflow-templates"

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (h *Host) templateCommitRoutes(handle func(string, func(*http.Request) (int, any, error))) {
	handle("POST "+APIPrefix+"git-sources/{name}/workflow-templates", func(r *http.Request) (int, any, error) {
		var req appproxyv1.WorkflowTemplateCommitRequest
		if err := decodeBody(r, &req); err != nil {
			return 0, nil, err
		}
		res, err := h.CommitWorkflowTemplate(r.Context(), callerOf(r), r.PathValue("name"), req)
		return http.StatusCreated, res, err
	})
}

// CommitWorkflowTemplate commits a WorkflowTemplate to Git Source source's repository, in
// one commit as c: the template as <dir>/<name>.yaml and, when the Git Source has no
// application deploying dir yet, that application (<source>-workflow-templates, automated
// sync to the namespace) in the Git Source's directory. The manifest must pass the workflow
// engine's lint; dir must lie outside the Git Source's path (whose files must be
// Applications).
func (h *Host) CommitWorkflowTemplate(ctx context.Context, c Caller, source string, req appproxyv1.WorkflowTemplateCommitRequest) (appproxyv1.WorkflowTemplateCommit, error) {
	var out appproxyv1.WorkflowTemplateCommit
	if err := c.mayWrite(); err != nil {
		return out, err
	}
	g, err := h.GitSource(source)
	if err != nil {
		return out, err
	}
	if h.isRenderedSource(source) {
		return out, errdefs.Invalid("gitSource", source, "renders its applications (a Helm chart or a Kustomization): add the template to its repository in git")
	}
	if strings.TrimSpace(req.Manifest) == "" {
		return out, errdefs.Invalid("manifest", "", "is required: the WorkflowTemplate, YAML or JSON")
	}
	if len(req.Manifest) > maxBody {
		return out, errdefs.Invalid("manifest", fmt.Sprintf("%d bytes", len(req.Manifest)), fmt.Sprintf("is larger than %d bytes", maxBody))
	}
	data, err := yaml.YAMLToJSON([]byte(req.Manifest))
	if err != nil {
		return out, errdefs.Invalid("manifest", "", "is not YAML or JSON: "+err.Error())
	}
	if len(data) == 0 || data[0] != '{' {
		return out, errdefs.Invalid("manifest", "", "is not a WorkflowTemplate object")
	}
	wt, err := workflows.DecodeTemplate(data, "WorkflowTemplate")
	if err != nil {
		var fe *errdefs.FieldError
		if errors.As(err, &fe) {
			return out, errdefs.Invalid("manifest."+fe.Field, fe.Value, fe.Reason)
		}
		return out, err
	}
	name := wt.Name
	if !dnsLabel.MatchString(name) {
		return out, errdefs.Invalid("manifest.metadata.name", name, "is not a name: 1-63 lowercase letters, digits and '-'")
	}
	content := []byte(req.Manifest)
	if data[0] == '{' && strings.HasPrefix(strings.TrimSpace(req.Manifest), "{") {
		if content, err = yaml.JSONToYAML(data); err != nil {
			return out, err
		}
	}
	msg := req.Message
	if msg == "" {
		msg = "add workflow template " + name
	}
	cm, err := h.commitBeside(ctx, c, source, g, besideCommit{dir: req.Dir, defaultDir: DefaultTemplatesDir, namespace: req.Namespace,
		appSuffix: "-workflow-templates", message: msg, upsert: req.Upsert,
		check: func(ns string) error {
			if wt.Namespace != "" && wt.Namespace != ns {
				return errdefs.Invalid("manifest.metadata.namespace", wt.Namespace, fmt.Sprintf("differs from the namespace the template is deployed to (%q): leave it out", ns))
			}
			return nil
		},
		files: func(dir string) []git.FileChange {
			return []git.FileChange{{Path: dir + "/" + name + ".yaml", Content: content}}
		}})
	if err != nil {
		return out, err
	}
	h.log.Info("workflow template committed", "template", name, "gitSource", source, "file", cm.files[0], "user", c.Email, "account", c.Account)
	return appproxyv1.WorkflowTemplateCommit{Name: name, GitSource: source, RepoURL: g.Spec.RepoURL, Branch: cm.branch, File: cm.files[0],
		Application: cm.app, ApplicationCreated: cm.appCreated, Commit: cm.commit, Namespace: cm.namespace}, nil
}

// besideCommit is a commit of files to a directory of a Git Source's repository beside its
// own path, with the application that deploys that directory.
type besideCommit struct {
	dir, defaultDir, namespace string
	// appSuffix names the application: the Git Source's name and it.
	appSuffix string
	message   string
	upsert    bool
	// check checks what is committed against the namespace it is deployed to.
	check func(ns string) error
	// files are the files to write in dir (Create is set from upsert).
	files func(dir string) []git.FileChange
}

type besideResult struct {
	files                     []string
	app                       string
	appCreated                bool
	branch, commit, namespace string
}

// commitBeside commits b's files to Git Source source's repository in one commit as c, in
// b.dir (outside the Git Source's path), with the application <source><appSuffix> that deploys
// the directory (automated sync to the namespace) when the Git Source has none yet. Nothing is
// written when an argument is refused.
func (h *Host) commitBeside(ctx context.Context, c Caller, source string, g *GitSource, b besideCommit) (besideResult, error) {
	var out besideResult
	dir := b.dir
	if dir == "" {
		dir = b.defaultDir
	}
	clean := strings.Trim(path.Clean("/"+dir), "/")
	if clean == "" || clean != strings.Trim(dir, "/") || strings.HasPrefix(clean, ".") {
		return out, errdefs.Invalid("dir", dir, "is not a directory of the repository: a relative path without '..' or '.', as "+b.defaultDir)
	}
	dir = clean
	src := g.dir()
	switch {
	case src == "":
		return out, errdefs.Invalid("gitSource", source, "loads Applications from its repository's root, where other manifests would be refused: give the Git Source a path (its directory of Applications)")
	case dir == src || strings.HasPrefix(dir+"/", src+"/") || strings.HasPrefix(src+"/", dir+"/"):
		return out, errdefs.Invalid("dir", dir, fmt.Sprintf("overlaps the Git Source's directory %q, whose files must be Applications: choose a directory beside it", src))
	}
	ns := b.namespace
	if ns == "" {
		ns = g.Spec.Destination.Namespace
	}
	if ns == "" {
		return out, errdefs.Invalid("namespace", "", fmt.Sprintf("is required: Git Source %q has no destination namespace to deploy to", source))
	}
	if !dnsLabel.MatchString(ns) {
		return out, errdefs.Invalid("namespace", ns, "is not a namespace name: 1-63 lowercase letters, digits and '-'")
	}
	if b.check != nil {
		if err := b.check(ns); err != nil {
			return out, err
		}
	}
	appName := source + b.appSuffix
	if len(appName) > 63 {
		appName = appName[:63]
	}
	changes := b.files(dir)
	for i := range changes {
		changes[i].Create = !b.upsert
		out.files = append(out.files, changes[i].Path)
	}
	h.mu.Lock()
	existing, exists := h.apps[appName]
	h.mu.Unlock()
	if exists && existing.source != source {
		return out, fmt.Errorf("application %q exists outside Git Source %q (%s): it cannot deploy the Git Source's %s: %w", appName, source, existing.file, dir, errdefs.ErrConflict)
	}
	if !exists {
		dest := g.Spec.Destination
		if dest.Name == "" && dest.Server == "" {
			dest.Name = "in-cluster"
		}
		dest.Namespace = ns
		a := &app.Application{}
		a.APIVersion, a.Kind = "argoproj.io/v1alpha1", app.KindApp
		a.Metadata.Name = appName
		a.Spec.Project = "default"
		a.Spec.Source = &app.Source{RepoURL: g.Spec.RepoURL, Path: dir, TargetRevision: g.Spec.TargetRevision}
		a.Spec.Destination = dest
		a.Spec.SyncPolicy = &app.SyncPolicy{Automated: &app.SyncPolicyAutomated{}}
		appYAML, err := app.EncodeApplication(a)
		if err != nil {
			return out, err
		}
		changes = append(changes, git.FileChange{Path: g.sourcePath(appName), Content: appYAML, Create: true})
	}
	repo := git.Repo{URL: g.Spec.RepoURL, Credentials: h.credentials(g.Spec.RepoURL)}
	branch := g.Spec.TargetRevision
	if branch == "HEAD" {
		branch = ""
	}
	h.writeMu.Lock()
	res, err := h.cache.Commit(ctx, repo, git.CommitRequest{Branch: branch, Message: b.message, Author: c.author(), Changes: changes})
	h.writeMu.Unlock()
	if errors.Is(err, git.ErrConflict) {
		return out, fmt.Errorf("%s exists in git source %s (use upsert to replace it): %w", strings.Join(out.files, " or "), source, errdefs.ErrConflict)
	}
	if err != nil {
		return out, err
	}
	h.cache.Invalidate(g.Spec.RepoURL)
	if err := h.Load(ctx); err != nil {
		return out, err
	}
	out.app, out.appCreated, out.branch, out.commit, out.namespace = appName, !exists, res.Branch, res.Commit.SHA, ns
	return out, nil
}
