package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/artifacts"
	"github.com/freshet-dev/freshet/internal/gitops/workflows/emissary"
)

// defaultKeyFormat is Argo's: an output artifact without a key goes to
// KEYFORMAT/NAME.tgz in the repository's bucket.
const defaultKeyFormat = "{{workflow.name}}/{{pod.name}}"

// maxArtifactSpec bounds the emissary's artifact spec (it travels in an environment variable).
const maxArtifactSpec = 96 << 10

// errNoRepository means no artifact repository is configured where the Workflow looks.
var errNoRepository = errors.New("no artifact repository")

// artifactVar is how an artifact is a {{…}} variable's value: its JSON, which a from
// reference decodes.
func artifactVar(a Artifact) string {
	b, _ := json.Marshal(a)
	return string(b)
}

// resolveFrom decodes what a from reference resolved to; ok is false while it did not resolve.
func resolveFrom(from string) (Artifact, bool, error) {
	if strings.Contains(from, "{{") {
		return Artifact{}, false, nil
	}
	var a Artifact
	if err := json.Unmarshal([]byte(from), &a); err != nil || !a.HasLocation() {
		return Artifact{}, false, fmt.Errorf("%q is not an artifact: from must be exactly one reference such as {{steps.NAME.outputs.artifacts.NAME}}", cut(from, 80))
	}
	return a, true, nil
}

// inputArtifacts gives a template its input artifacts: each from the caller's argument of the
// same name (a location, or a from reference resolved to an output artifact), else the
// template's own location; an optional one that is given nowhere is left out.
func (o *operation) inputArtifacts(t *Template, inv invocation, sc scope) ([]Artifact, error) {
	given := map[string]Artifact{}
	for _, a := range inv.arts {
		given[a.Name] = a
	}
	var out []Artifact
	for _, in := range t.Inputs.Artifacts {
		res := in
		res.From = ""
		arg, ok := given[in.Name]
		switch {
		case ok && arg.From != "":
			a, resolved, err := resolveFrom(arg.From)
			if err != nil {
				return nil, fmt.Errorf("inputs.artifacts.%s: from: %v", in.Name, err)
			}
			if !resolved {
				if in.Optional {
					continue
				}
				_, missing := scope{}.replace(arg.From, []string{""})
				ref := arg.From
				if len(missing) > 0 {
					ref = "{{" + missing[0] + "}}"
				}
				return nil, fmt.Errorf("inputs.artifacts.%s: required input artifact is missing: %s did not resolve (the step or task did not produce it)", in.Name, ref)
			}
			res.ArtifactLocation = a.ArtifactLocation
		case ok && arg.HasLocation():
			res.ArtifactLocation = arg.ArtifactLocation
		case in.HasLocation():
		case in.Optional:
			continue
		default:
			return nil, fmt.Errorf("inputs.artifacts.%s: required input artifact is missing: it was not supplied (give it in arguments.artifacts, or a location in the template)", in.Name)
		}
		if res.Path != "" {
			p, missing := sc.replace(res.Path, leafStrict)
			if len(missing) > 0 {
				return nil, fmt.Errorf("inputs.artifacts.%s.path: failed to resolve {{%s}}", in.Name, missing[0])
			}
			res.Path = p
		}
		out = append(out, res)
	}
	return out, nil
}

// repository is the Workflow's artifact repository, resolved once and kept in its status.
func (o *operation) repository() (*ArtifactRepository, error) {
	if o.repo == nil {
		st, err := o.cl.artifactRepository(o.ctx, o.wf.Namespace, o.spec.ArtifactRepositoryRef)
		if err != nil {
			if !errors.Is(err, errNoRepository) && !errors.Is(err, errdefs.ErrInvalid) {
				o.err = fmt.Errorf("artifact repository: %w", err)
			}
			return nil, err
		}
		o.repo = st
	}
	return o.repo.ArtifactRepository, nil
}

// archiveOf is an output artifact's archive strategy and gzip level.
func archiveOf(a *Artifact) (string, *int) {
	if a.Archive == nil {
		return artifacts.ArchiveTar, nil
	}
	switch {
	case a.Archive.None != nil:
		return artifacts.ArchiveNone, nil
	case a.Archive.Zip != nil:
		return artifacts.ArchiveZip, nil
	case a.Archive.Tar != nil && a.Archive.Tar.CompressionLevel != nil:
		l := int(*a.Archive.Tar.CompressionLevel)
		return artifacts.ArchiveTar, &l
	}
	return artifacts.ArchiveTar, nil
}

// fileName is an output artifact's name in the repository: NAME.tgz, NAME.zip, or the file's
// own name when it is not archived.
func fileName(a *Artifact) string {
	switch ar, _ := archiveOf(a); ar {
	case artifacts.ArchiveNone:
		return path.Base(a.Path)
	case artifacts.ArchiveZip:
		return a.Name + ".zip"
	}
	return a.Name + ".tgz"
}

// outputArtifacts are a pod node's output artifacts with the locations they are stored at: the
// artifact's own (an s3 key, an http URL), else the repository's bucket under its keyFormat.
// The same node always gets the same locations.
func (o *operation) outputArtifacts(n *NodeStatus, t *Template) ([]Artifact, error) {
	var out []Artifact
	for _, a := range t.Outputs.Artifacts {
		res := a
		f := "outputs.artifacts." + a.Name
		switch {
		case a.HTTP != nil:
		case a.S3 != nil && a.S3.Key != "" && a.S3.Bucket != "" && a.S3.Endpoint != "":
		default:
			repo, err := o.repository()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if repo == nil || repo.S3 == nil {
				return nil, fmt.Errorf("%s: the artifact repository has no s3 bucket", f)
			}
			s3 := &S3Artifact{S3Bucket: repo.S3.S3Bucket}
			if a.S3 != nil {
				mergeBucket(&s3.S3Bucket, &a.S3.S3Bucket)
				s3.Key = a.S3.Key
			}
			if s3.Key == "" {
				key, err := o.renderKey(repo.S3, n)
				if err != nil {
					return nil, err
				}
				s3.Key = strings.TrimSuffix(key, "/") + "/" + fileName(&a)
			}
			res.S3 = s3
		}
		out = append(out, res)
	}
	return out, nil
}

// mergeBucket sets in dst the fields src gives.
func mergeBucket(dst, src *S3Bucket) {
	if src.Endpoint != "" {
		dst.Endpoint = src.Endpoint
	}
	if src.Bucket != "" {
		dst.Bucket = src.Bucket
	}
	if src.Region != "" {
		dst.Region = src.Region
	}
	if src.Insecure != nil {
		dst.Insecure = src.Insecure
	}
	if src.AccessKeySecret != nil {
		dst.AccessKeySecret, dst.SecretKeySecret = src.AccessKeySecret, src.SecretKeySecret
	}
}

// renderKey renders the repository's keyFormat (keyPrefix/{{workflow.name}}/{{pod.name}} when
// there is none) for a node.
func (o *operation) renderKey(r *S3ArtifactRepository, n *NodeStatus) (string, error) {
	kf := r.KeyFormat
	if kf == "" {
		kf = defaultKeyFormat
		if r.KeyPrefix != "" {
			kf = strings.TrimSuffix(r.KeyPrefix, "/") + "/" + kf
		}
	}
	sc := merge(o.globals)
	sc["pod.name"] = podName(n.ID)
	sc["node.name"] = n.Name
	sc["node.id"] = n.ID
	ct := o.wf.CreationTimestamp.UTC()
	for k, v := range map[string]string{"Y": ct.Format("2006"), "m": ct.Format("01"), "d": ct.Format("02"),
		"H": ct.Format("15"), "M": ct.Format("04"), "S": ct.Format("05"), "s": strconv.FormatInt(ct.Unix(), 10)} {
		sc["workflow.creationTimestamp."+k] = v
	}
	key, missing := sc.replace(kf, []string{""})
	if len(missing) > 0 {
		return "", fmt.Errorf("artifact repository keyFormat %q: failed to resolve {{%s}}", kf, missing[0])
	}
	key = strings.TrimPrefix(path.Clean("/"+key), "/")
	if key == "" {
		return "", fmt.Errorf("artifact repository keyFormat %q renders an empty key", kf)
	}
	return key, nil
}

// secretEnvs gives each Secret key the pod reads an environment variable of the main container.
type secretEnvs struct {
	env   []corev1.EnvVar
	names map[string]string
}

func (s *secretEnvs) name(sel *corev1.SecretKeySelector) string {
	if sel == nil {
		return ""
	}
	k := sel.Name + "\x00" + sel.Key
	if n, ok := s.names[k]; ok {
		return n
	}
	if s.names == nil {
		s.names = map[string]string{}
	}
	n := emissary.EnvSecretPrefix + strconv.Itoa(len(s.names))
	s.names[k] = n
	s.env = append(s.env, corev1.EnvVar{Name: n, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: sel.LocalObjectReference, Key: sel.Key}}})
	return n
}

// location turns an artifact's location into what the emissary moves, after the runtime's
// network policy accepted its URL.
func (o *operation) location(l ArtifactLocation, field string, se *secretEnvs) (artifacts.Location, error) {
	p := o.opts.policy
	switch {
	case l.S3 != nil:
		s := l.S3
		if s.Endpoint == "" || s.Bucket == "" || s.Key == "" {
			return artifacts.Location{}, errdefs.Invalid(field+".s3", s.Endpoint+"/"+s.Bucket+"/"+s.Key, "needs endpoint, bucket and key (or an artifact repository that gives them)")
		}
		scheme := "https://"
		if s.Insecure != nil && *s.Insecure {
			scheme = "http://"
		}
		if p != nil {
			if err := p.CheckServerURL(field+".s3.endpoint", scheme+s.Endpoint); err != nil {
				return artifacts.Location{}, err
			}
		}
		return artifacts.Location{S3: &artifacts.S3{Endpoint: s.Endpoint, Bucket: s.Bucket, Region: s.Region, Key: s.Key,
			Insecure: s.Insecure != nil && *s.Insecure, AccessKeyEnv: se.name(s.AccessKeySecret), SecretKeyEnv: se.name(s.SecretKeySecret)}}, nil
	case l.Git != nil:
		g := l.Git
		if err := checkURL(g.Repo, field+".git.repo"); err != nil {
			return artifacts.Location{}, err
		}
		if p != nil {
			if err := p.CheckRepoURL(field+".git.repo", g.Repo); err != nil {
				return artifacts.Location{}, err
			}
		}
		depth := 0
		if g.Depth != nil {
			depth = int(*g.Depth)
		}
		return artifacts.Location{Git: &artifacts.Git{Repo: g.Repo, Revision: g.Revision, Depth: depth, DisableSubmodules: g.DisableSubmodules,
			UsernameEnv: se.name(g.UsernameSecret), PasswordEnv: se.name(g.PasswordSecret)}}, nil
	case l.HTTP != nil:
		if err := checkURL(l.HTTP.URL, field+".http.url"); err != nil {
			return artifacts.Location{}, err
		}
		if p != nil {
			if err := p.CheckServerURL(field+".http.url", l.HTTP.URL); err != nil {
				return artifacts.Location{}, err
			}
		}
		h := &artifacts.HTTP{URL: l.HTTP.URL}
		for _, x := range l.HTTP.Headers {
			h.Headers = append(h.Headers, artifacts.Header{Name: x.Name, Value: x.Value})
		}
		return artifacts.Location{HTTP: h}, nil
	case l.Raw != nil:
		return artifacts.Location{Raw: &artifacts.Raw{Data: l.Raw.Data}}, nil
	}
	return artifacts.Location{}, errdefs.Invalid(field, "", "has no location")
}

// podArtifacts is the environment that tells a pod's emissary which artifacts to load and save,
// and the Secrets' values it reads them with.
func (o *operation) podArtifacts(n *NodeStatus, t *Template) ([]corev1.EnvVar, error) {
	var inputs []Artifact
	if n.Inputs != nil {
		inputs = n.Inputs.Artifacts
	}
	if len(inputs) == 0 && len(t.Outputs.Artifacts) == 0 {
		return nil, nil
	}
	var se secretEnvs
	var spec artifacts.Spec
	for _, a := range inputs {
		loc, err := o.location(a.ArtifactLocation, "inputs.artifacts."+a.Name, &se)
		if err != nil {
			return nil, err
		}
		spec.Inputs = append(spec.Inputs, artifacts.Input{Name: a.Name, Path: a.Path, Mode: a.Mode, Location: loc})
	}
	outs, err := o.outputArtifacts(n, t)
	if err != nil {
		return nil, err
	}
	for _, a := range outs {
		loc, err := o.location(a.ArtifactLocation, "outputs.artifacts."+a.Name, &se)
		if err != nil {
			return nil, err
		}
		ar, lvl := archiveOf(&a)
		spec.Outputs = append(spec.Outputs, artifacts.Output{Name: a.Name, Path: a.Path, Optional: a.Optional, Archive: ar, Level: lvl, Location: loc})
	}
	if o.opts.policy != nil {
		spec.PrivateNetworks = o.opts.policy.Networks()
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	if len(b) > maxArtifactSpec {
		return nil, fmt.Errorf("the step's artifacts take %d bytes to describe; at most %d (raw artifacts count whole)", len(b), maxArtifactSpec)
	}
	return append([]corev1.EnvVar{{Name: emissary.EnvArtifacts, Value: string(b)}}, se.env...), nil
}

// collectArtifacts reads which output artifacts the emissary saved; the second value says why
// one that is not optional is missing.
func (o *operation) collectArtifacts(n *NodeStatus, t *Template, eo *emissary.Outputs, reported bool) ([]Artifact, string) {
	if len(t.Outputs.Artifacts) == 0 {
		return nil, ""
	}
	outs, err := o.outputArtifacts(n, t)
	if err != nil {
		return nil, err.Error()
	}
	var got []Artifact
	for _, a := range outs {
		if _, ok := eo.Artifacts[a.Name]; ok {
			got = append(got, a)
			continue
		}
		msg := eo.ArtifactErrors[a.Name]
		switch {
		case msg != "" && !a.Optional:
			return got, fmt.Sprintf("failed to save output artifact %q: %s", a.Name, msg)
		case a.Optional:
		case eo.Error != "":
			return got, fmt.Sprintf("output artifact %q: %s", a.Name, eo.Error)
		case !reported:
			return got, fmt.Sprintf("output artifact %q: not collected (the pod reported no outputs)", a.Name)
		default:
			return got, fmt.Sprintf("output artifact %q: not saved", a.Name)
		}
	}
	return got, ""
}

// globalArtifacts records the output artifacts with a globalName as workflow.outputs.artifacts.
func (o *operation) globalArtifacts(n *NodeStatus) {
	if n.Outputs == nil {
		return
	}
	for _, a := range n.Outputs.Artifacts {
		if a.GlobalName != "" {
			g := a
			g.Name, g.GlobalName = a.GlobalName, ""
			o.globals["workflow.outputs.artifacts."+a.GlobalName] = artifactVar(g)
		}
	}
}

// workflowOutputs are the artifacts with a globalName, in the workflow's status.outputs (the
// node that finished last wins, as in Argo).
func (o *operation) workflowOutputs(st *WorkflowStatus) {
	nodes := make([]*NodeStatus, 0, len(o.nodes))
	for _, n := range o.nodes {
		if n.Outputs != nil && n.Type == NodeTypePod {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool {
		if !nodes[i].FinishedAt.Equal(&nodes[j].FinishedAt) {
			return nodes[i].FinishedAt.Before(&nodes[j].FinishedAt)
		}
		return nodes[i].ID < nodes[j].ID
	})
	arts := map[string]Artifact{}
	for _, n := range nodes {
		for _, a := range n.Outputs.Artifacts {
			if a.GlobalName != "" {
				g := a
				g.Name, g.GlobalName = a.GlobalName, ""
				arts[a.GlobalName] = g
			}
		}
	}
	if len(arts) == 0 {
		return
	}
	names := make([]string, 0, len(arts))
	for nm := range arts {
		names = append(names, nm)
	}
	sort.Strings(names)
	if st.Outputs == nil {
		st.Outputs = &Outputs{}
	}
	st.Outputs.Artifacts = nil
	for _, nm := range names {
		st.Outputs.Artifacts = append(st.Outputs.Artifacts, arts[nm])
	}
}

// gcStrategy is an output artifact's artifactGC strategy: its own, else the workflow's.
func gcStrategy(spec *WorkflowSpec, a *Artifact) string {
	if a.ArtifactGC != nil && a.ArtifactGC.Strategy != "" {
		return a.ArtifactGC.Strategy
	}
	if spec.ArtifactGC != nil && spec.ArtifactGC.Strategy != "" {
		return spec.ArtifactGC.Strategy
	}
	return ArtifactGCNever
}
