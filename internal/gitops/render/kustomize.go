package render

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// originAnnotation is where kustomize records the file a resource came from (with
// buildMetadata: [originAnnotations]).
const originAnnotation = "config.kubernetes.io/origin"

// kustomize builds the app directory's kustomization in-process, after applying the app's
// kustomize overrides to it in memory (Argo CD runs `kustomize edit` on a copy), on a file
// system confined to the checkout. Remote bases and remote files are refused before the build,
// so Kustomize never clones or downloads.
func (j *job) kustomize(ctx context.Context) (*Result, error) {
	kfile := kustomizationFile(j.dir)
	if kfile == "" {
		return nil, newError(ErrNotFound, j.srcPath, 0, "no kustomization.yaml, kustomization.yml or Kustomization in the app directory")
	}
	fsys := &rootFS{j: j, overlay: map[string][]byte{}}
	data, err := fsys.ReadFile(kfile)
	if err != nil {
		return nil, err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, newError(ErrInvalidManifest, j.rel(kfile), 0, "%s", j.scrub(err.Error()))
	}
	var warnings []string
	if dep := k.CheckDeprecatedFields(); dep != nil {
		for _, w := range *dep {
			warnings = append(warnings, j.rel(kfile)+": "+strings.TrimPrefix(w, "# Warning: "))
		}
	}
	k.FixKustomization()
	if ov := j.req.Source.Kustomize; ov != nil {
		more, err := j.applyOverrides(&k, ov, fsys)
		if err != nil {
			return nil, err
		}
		warnings = append(warnings, more...)
	}
	addedOrigin := !slices.Contains(k.BuildMetadata, types.OriginAnnotations)
	if addedOrigin {
		k.BuildMetadata = append(k.BuildMetadata, types.OriginAnnotations)
	}
	edited, err := sigsyaml.Marshal(&k)
	if err != nil {
		return nil, newError(ErrTool, j.rel(kfile), 0, "%v", err)
	}
	fsys.overlay[kfile] = edited
	if err := j.refuseRemote(fsys, j.dir, map[string]bool{}, 0); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified // kustomize build's default ordering
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	resMap, err := krusty.MakeKustomizer(opts).Run(fsys, j.dir)
	if err != nil {
		if re, ok := err.(*Error); ok {
			return nil, re
		}
		return nil, newError(ErrTool, j.rel(kfile), 0, "kustomize build: %s", j.scrub(err.Error()))
	}
	out := &output{j: j}
	for _, res := range resMap.Resources() {
		file := ""
		if ann := res.GetAnnotations(); ann != nil {
			if origin, ok := ann[originAnnotation]; ok {
				file = j.originFile(origin)
				if addedOrigin {
					delete(ann, originAnnotation)
					if err := res.SetAnnotations(ann); err != nil {
						return nil, newError(ErrTool, file, 0, "%v", err)
					}
				}
			}
		}
		b, err := res.MarshalJSON()
		if err != nil {
			return nil, newError(ErrTool, file, 0, "%v", err)
		}
		u, err := fromJSON(b)
		if err != nil {
			return nil, newError(ErrTool, file, 0, "%v", err)
		}
		if len(u.GetAnnotations()) == 0 {
			unstructuredDropEmptyAnnotations(u.Object)
		}
		if err := out.add(u, Location{File: file}, len(b)); err != nil {
			return nil, err
		}
	}
	return &Result{Objects: out.objs, Warnings: warnings}, nil
}

func unstructuredDropEmptyAnnotations(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		if a, ok := md["annotations"].(map[string]any); ok && len(a) == 0 {
			delete(md, "annotations")
		}
	}
}

// originFile turns a kustomize origin annotation ("path: ../base/deploy.yaml" or
// "configuredIn: kustomization.yaml") into a repository-relative file.
func (j *job) originFile(origin string) string {
	var o struct {
		Path         string `json:"path"`
		Repo         string `json:"repo"`
		ConfiguredIn string `json:"configuredIn"`
	}
	if err := sigsyaml.Unmarshal([]byte(origin), &o); err != nil || o.Repo != "" {
		return ""
	}
	p := o.Path
	if p == "" {
		p = o.ConfiguredIn
	}
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		return j.rel(p)
	}
	return path.Clean(path.Join(j.srcPath, filepath.ToSlash(p)))
}

// scrub makes tool messages repository-relative (no snapshot paths in conditions).
func (j *job) scrub(msg string) string {
	return strings.ReplaceAll(msg, j.root+string(filepath.Separator), "")
}

// applyOverrides edits the kustomization as Argo CD's `kustomize edit` calls would.
func (j *job) applyOverrides(k *types.Kustomization, ov *app.KustomizeSource, fsys *rootFS) ([]string, error) {
	var warnings []string
	env := j.buildEnv()
	if ov.NamePrefix != "" {
		k.NamePrefix = ov.NamePrefix
	}
	if ov.NameSuffix != "" {
		k.NameSuffix = ov.NameSuffix
	}
	if ov.Namespace != "" {
		k.Namespace = ov.Namespace
	}
	for _, s := range ov.Images {
		img, err := parseImageOverride(s)
		if err != nil {
			return nil, newError(ErrInvalidManifest, "", 0, "spec.source.kustomize.images %q: %v", s, err)
		}
		k.Images = upsertImage(k.Images, img)
	}
	for _, r := range ov.Replicas {
		n, err := strconv.ParseInt(r.Count, 10, 64)
		if err != nil || n < 0 {
			return nil, newError(ErrInvalidManifest, "", 0, "spec.source.kustomize.replicas %s count %q is not a non-negative integer", r.Name, r.Count)
		}
		i := slices.IndexFunc(k.Replicas, func(x types.Replica) bool { return x.Name == r.Name })
		if i >= 0 {
			k.Replicas[i].Count = n
		} else {
			k.Replicas = append(k.Replicas, types.Replica{Name: r.Name, Count: n})
		}
	}
	if len(ov.CommonLabels) > 0 {
		if ov.LabelWithoutSelector {
			k.Labels = append(k.Labels, types.Label{Pairs: ov.CommonLabels, IncludeSelectors: false, IncludeTemplates: ov.LabelIncludeTemplates})
		} else {
			// `kustomize edit add label` (what Argo CD runs) still writes commonLabels.
			//lint:ignore SA1019 commonLabels is what Argo CD's override produces
			if k.CommonLabels == nil {
				k.CommonLabels = map[string]string{} //lint:ignore SA1019 see above
			}
			for _, key := range sortedKeys(ov.CommonLabels) {
				//lint:ignore SA1019 see above
				if _, exists := k.CommonLabels[key]; exists && !ov.ForceCommonLabels {
					return nil, newError(ErrInvalidManifest, j.rel(kustomizationFile(j.dir)), 0,
						"commonLabels %q is already in the kustomization; set spec.source.kustomize.forceCommonLabels to override it", key)
				}
				//lint:ignore SA1019 see above
				k.CommonLabels[key] = ov.CommonLabels[key]
			}
		}
	}
	if len(ov.CommonAnnotations) > 0 {
		if k.CommonAnnotations == nil {
			k.CommonAnnotations = map[string]string{}
		}
		for _, key := range sortedKeys(ov.CommonAnnotations) {
			if _, exists := k.CommonAnnotations[key]; exists && !ov.ForceCommonAnnotations {
				return nil, newError(ErrInvalidManifest, j.rel(kustomizationFile(j.dir)), 0,
					"commonAnnotations %q is already in the kustomization; set spec.source.kustomize.forceCommonAnnotations to override it", key)
			}
			v := ov.CommonAnnotations[key]
			if ov.CommonAnnotationsEnvsubst {
				v = os.Expand(v, func(name string) string { return env[name] })
			}
			k.CommonAnnotations[key] = v
		}
	}
	for _, c := range ov.Components {
		p := filepath.Join(j.dir, filepath.FromSlash(c))
		if !fsys.Exists(p) {
			if ov.IgnoreMissingComponents {
				warnings = append(warnings, fmt.Sprintf("component %s does not exist; ignored (ignoreMissingComponents)", c))
				continue
			}
			return nil, newError(ErrNotFound, path.Join(j.srcPath, c), 0, "kustomize component does not exist")
		}
		if !slices.Contains(k.Components, c) {
			k.Components = append(k.Components, c)
		}
	}
	for _, p := range ov.Patches {
		patch := types.Patch{Path: p.Path, Patch: p.Patch, Options: p.Options}
		if t := p.Target; t != nil {
			patch.Target = &types.Selector{
				ResId:              resid.ResId{Gvk: resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, Name: t.Name, Namespace: t.Namespace},
				LabelSelector:      t.LabelSelector,
				AnnotationSelector: t.AnnotationSelector,
			}
		}
		k.Patches = append(k.Patches, patch)
	}
	return warnings, nil
}

// buildEnv is the environment Argo CD gives tools (for commonAnnotationsEnvsubst).
func (j *job) buildEnv() map[string]string {
	short := j.req.Revision
	if len(short) > 7 {
		short = short[:7]
	}
	return map[string]string{
		"ARGOCD_APP_NAME":                   j.req.AppName,
		"ARGOCD_APP_NAMESPACE":              j.req.Namespace,
		"ARGOCD_APP_REVISION":               j.req.Revision,
		"ARGOCD_APP_REVISION_SHORT":         short,
		"ARGOCD_APP_SOURCE_PATH":            j.srcPath,
		"ARGOCD_APP_SOURCE_REPO_URL":        j.req.Source.RepoURL,
		"ARGOCD_APP_SOURCE_TARGET_REVISION": j.req.Source.TargetRevision,
		"KUBE_VERSION":                      strings.TrimPrefix(j.kubeVersion(), "v"),
		"KUBE_API_VERSIONS":                 strings.Join(j.req.APIVersions, ","),
	}
}

func (j *job) kubeVersion() string {
	if j.req.KubeVersion != "" {
		return j.req.KubeVersion
	}
	return DefaultKubeVersion
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseImageOverride parses `kustomize edit set image` syntax: name[=newName][:tag][@digest].
func parseImageOverride(s string) (types.Image, error) {
	var img types.Image
	name, rest, renamed := strings.Cut(s, "=")
	if !renamed {
		rest = s
	}
	ref, digest, _ := strings.Cut(rest, "@")
	nm, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		nm, tag = ref[:i], ref[i+1:]
		if tag == "" {
			return img, fmt.Errorf("%q has ':' but no tag after it", s)
		}
	}
	if renamed {
		img.Name, img.NewName = name, nm
	} else {
		img.Name = nm
	}
	img.NewTag, img.Digest = tag, digest
	switch {
	case img.Name == "":
		return img, fmt.Errorf("no image name")
	case strings.Contains(img.Name, "@"):
		return img, fmt.Errorf("image name %q holds '@': write name=newName@digest", img.Name)
	case renamed && img.NewName == "":
		return img, fmt.Errorf("no new image name after '=': write name=newName[:tag][@digest], or name[:tag][@digest]")
	}
	return img, nil
}

func upsertImage(list []types.Image, img types.Image) []types.Image {
	for i := range list {
		if list[i].Name != img.Name {
			continue
		}
		if img.NewName != "" {
			list[i].NewName = img.NewName
		}
		if img.NewTag != "" {
			list[i].NewTag, list[i].Digest = img.NewTag, ""
		}
		if img.Digest != "" {
			list[i].Digest, list[i].NewTag = img.Digest, ""
		}
		return list
	}
	return append(list, img)
}

var scpRef = regexp.MustCompile(`^[^/@:\s]+@[^/:\s]+:`)

// isRemoteRef reports whether kustomize would fetch a reference from the network (clone a
// repository or download a file) instead of reading the repository.
func isRemoteRef(ref string) bool {
	lower := strings.ToLower(strings.TrimSpace(ref))
	return strings.Contains(lower, "://") || strings.HasPrefix(lower, "git::") ||
		strings.HasPrefix(lower, "github.com") || strings.HasPrefix(lower, "gitlab.com/") ||
		strings.HasPrefix(lower, "bitbucket.org/") || scpRef.MatchString(lower)
}

// refuseRemote walks the kustomization graph from dir and fails on any remote reference.
func (j *job) refuseRemote(fsys *rootFS, dir string, seen map[string]bool, depth int) error {
	if seen[dir] || depth > 64 {
		return nil
	}
	seen[dir] = true
	kf := kustomizationFile(dir)
	if kf == "" {
		return nil
	}
	data, err := fsys.ReadFile(kf)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil // kustomize reports it with context
	}
	k.FixKustomization()
	file := j.rel(kf)
	if len(k.HelmCharts) > 0 || len(k.HelmChartInflationGenerator) > 0 {
		return newError(ErrUnsupported, file, 0, "helmCharts in a kustomization need kustomize's --enable-helm and a helm binary; use a Helm source for the chart instead")
	}
	var refs []string
	refs = append(refs, k.Resources...)
	refs = append(refs, k.Components...)
	refs = append(refs, k.Crds...)
	refs = append(refs, k.Configurations...)
	refs = append(refs, k.Generators...)
	refs = append(refs, k.Transformers...)
	refs = append(refs, k.Validators...)
	for _, p := range k.Patches {
		if p.Path != "" {
			refs = append(refs, p.Path)
		}
	}
	//lint:ignore SA1019 old kustomizations still use it, and kustomize still reads it
	for _, p := range k.PatchesStrategicMerge {
		if s := string(p); !strings.Contains(s, "\n") {
			refs = append(refs, s)
		}
	}
	if p := k.OpenAPI["path"]; p != "" {
		refs = append(refs, p)
	}
	for _, ref := range refs {
		if isRemoteRef(ref) {
			return newError(ErrRemoteDependency, file, 0,
				"%q is fetched from the network, which Freshet does not do; vendor it into the repository and refer to it by a relative path", ref)
		}
		p := filepath.Join(dir, filepath.FromSlash(ref))
		if fsys.IsDir(p) {
			real, err := fsys.resolve(p)
			if err != nil {
				continue
			}
			if err := j.refuseRemote(fsys, real, seen, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
