package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The deploy and helm step types: Codefresh's `type: deploy` (kind: kubernetes) and its helm
// step (cfstep-helm's arguments). Both name a cluster context literally, so the control plane
// can check, before the build starts, that the pipeline may use it.

// Deploy is a deploy step: manifests applied to a cluster context, or a Deployment's image
// replaced, then the rollout of its Deployments waited for.
type Deploy struct {
	Kind      string `json:"kind"`      // always kubernetes
	Cluster   string `json:"cluster"`   // a kubernetes context's name, literal
	Namespace string `json:"namespace"` // default "default"
	// Service is the Deployment whose first container gets Candidate.Image. Without FilePath
	// it must exist in the cluster; with FilePath, it is the Deployment of the file to change.
	Service   string     `json:"service,omitempty"`
	Candidate *Candidate `json:"candidate,omitempty"`
	// FilePath is a manifest file or a directory of them (.yaml, .yml, .json), relative to
	// the step's working directory.
	FilePath   string   `json:"filePath,omitempty"`
	WorkingDir string   `json:"workingDirectory,omitempty"`
	Timeout    Duration `json:"timeout"` // the wait for the rollout; DefaultDeployTimeout when not written
}

// Candidate is the image a deploy step rolls out.
type Candidate struct {
	Image    string `json:"image"`
	Registry string `json:"registry,omitempty"` // the registry context the image is pulled from
}

// Helm is a helm step.
type Helm struct {
	Action       string   `json:"action"`    // HelmInstall, HelmUpgrade, HelmLint or HelmPush
	ChartName    string   `json:"chartName"` // a path in the workspace, or a chart of the repository
	ChartRepoURL string   `json:"chartRepoUrl,omitempty"`
	ChartVersion string   `json:"chartVersion,omitempty"`
	RepoContext  string   `json:"repoContext,omitempty"` // a helm-repository context's name
	ReleaseName  string   `json:"releaseName,omitempty"`
	KubeContext  string   `json:"kubeContext,omitempty"` // a kubernetes context's name, literal
	Namespace    string   `json:"namespace,omitempty"`
	Values       []string `json:"values,omitempty"`     // key=value, keys with '.' already (custom_values' '_' converted)
	ValueFiles   []string `json:"valueFiles,omitempty"` // paths relative to the working directory
	WorkingDir   string   `json:"workingDirectory,omitempty"`
	Wait         bool     `json:"wait,omitempty"`
	Atomic       bool     `json:"atomic,omitempty"`
	CreateNS     bool     `json:"createNamespace,omitempty"`
	DryRun       bool     `json:"dryRun,omitempty"`
	Timeout      Duration `json:"timeout,omitzero"` // --timeout in cmd_ps; Helm's 5m when zero
	ResetValues  bool     `json:"resetValues,omitempty"`
	ReuseValues  bool     `json:"reuseValues,omitempty"`
	SkipCRDs     bool     `json:"skipCrds,omitempty"`
	DisableHooks bool     `json:"disableHooks,omitempty"`
	Description  string   `json:"description,omitempty"`
	HistoryMax   *int     `json:"historyMax,omitempty"` // nil: DefaultHelmHistoryMax; 0: no limit
	AppVersion   string   `json:"appVersion,omitempty"` // push: the packaged chart's appVersion
}

// Helm actions.
const (
	HelmInstall = "install" // helm upgrade --install, as Codefresh's install action does
	HelmUpgrade = "upgrade" // the same as install
	HelmLint    = "lint"
	HelmPush    = "push" // package a workspace chart and upload it to a ChartMuseum-API repository
)

// DefaultHelmHistoryMax is how many revisions of a release an upgrade keeps when cmd_ps does
// not say (--history-max), as the helm CLI (and so Codefresh's helm step) does.
const DefaultHelmHistoryMax = 10

// DefaultDeployTimeout is how long a deploy step waits for its Deployments to roll out, as
// Codefresh's deploy step does when timeout is not written.
const DefaultDeployTimeout = 120 * time.Second

var deployFields = concat(commonFields, "retry", "hooks", "kind", "cluster", "namespace", "service", "candidate", "file_path", "timeout", "working_directory")

var helmFields = concat(commonFields, "retry", "timeout", "hooks", "arguments", "working_directory", "action", "chart_name", "chart_repo_url",
	"chart_version", "release_name", "kube_context", "namespace", "helm_version", "custom_values", "custom_value_files", "cmd_ps",
	"credentials_in_arguments", "helm_repository_context", "skip_cf_stable_helm_repo", "app_version", "chart_subdir", "commands",
	"primary_helm_context", "use_repos_for_auth_action")

// helmActions are the actions Freshet runs; helmRefused are Codefresh's others, with why.
var (
	helmActions = []string{HelmInstall, HelmUpgrade, HelmLint, HelmPush}
	helmRefused = map[string]string{
		"auth":      "runs commands in the helm image after logging in to the repositories: run helm in a freestyle step instead",
		"promotion": "is a Codefresh Helm-board action: use install with the chart and values of the target environment",
	}
)

// cmdPSFlags are the helm CLI flags cmd_ps may carry, as the Helm SDK runs them.
var cmdPSFlags = []string{"--wait", "--atomic", "--create-namespace", "--dry-run", "--timeout", "--reset-values", "--reuse-values",
	"--skip-crds", "--no-hooks", "--description", "--history-max"}

var (
	dnsLabelRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	releaseNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	contextNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._-]{0,62})$`)
	valueKeyRE    = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]+$`)
)

// deployField compiles a field only deploy and helm steps have; it returns false for the
// fields every step has (title, when, retry, …), which field compiles.
func (st *stepCompile) deployField(f kv, fp string) bool {
	c, s := st.c, st.s
	switch s.Type {
	case TypeDeploy:
		if s.Deploy == nil {
			s.Deploy = &Deploy{Namespace: "default", Timeout: Duration{DefaultDeployTimeout}}
		}
		d := s.Deploy
		switch f.name {
		case "kind":
			if v, ok := c.text(f.val, fp); ok && v != "kubernetes" {
				c.errorf(f.val, fp, v, "is not a deploy kind Freshet runs: the only one is kubernetes")
			} else {
				d.Kind = v
			}
		case "cluster":
			d.Cluster = st.contextName(f.val, fp, "a kubernetes context")
		case "namespace":
			d.Namespace = st.namespace(f.val, fp, "default")
		case "service":
			if v, ok := c.text(f.val, fp); ok && v != "" {
				if !strings.Contains(v, "${{") && (!dnsLabelRE.MatchString(v) || len(v) > 253) {
					c.errorf(f.val, fp, v, "is not a Deployment name: lower-case letters, digits and '-', starting and ending with a letter or digit")
					return true
				}
				d.Service = v
			}
		case "candidate":
			d.Candidate = st.candidate(f.val, fp)
		case "file_path":
			d.FilePath, _ = c.text(f.val, fp)
		case "working_directory":
			d.WorkingDir, _ = c.text(f.val, fp)
		case "timeout":
			d.Timeout = st.deployTimeout(f.val, fp)
		default:
			return false
		}
		return true
	case TypeHelm:
		if s.Helm == nil {
			s.Helm = &Helm{Action: HelmInstall}
		}
		h := s.Helm
		switch f.name {
		case "action":
			v, ok := c.text(f.val, fp)
			switch {
			case !ok:
			case slices.Contains(helmActions, v):
				h.Action = v
			case helmRefused[v] != "":
				h.Action = ""
				c.errorf(f.val, fp, v, "%s (Freshet runs %s)", helmRefused[v], choices(helmActions...))
			default:
				h.Action = ""
				c.errorf(f.val, fp, v, "is not a helm action: use %s", choices(helmActions...))
			}
		case "chart_name":
			h.ChartName, _ = c.text(f.val, fp)
		case "chart_repo_url":
			if v, ok := c.text(f.val, fp); ok && v != "" {
				if !strings.Contains(v, "${{") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "oci://") {
					c.errorf(f.val, fp, v, "is not a chart repository URL Freshet reads: give http://, https:// or oci:// (cm:// and az:// repositories are not supported)")
					return true
				}
				h.ChartRepoURL = v
			}
		case "chart_version":
			h.ChartVersion, _ = c.text(f.val, fp)
		case "helm_repository_context":
			h.RepoContext = st.contextName(f.val, fp, "a helm-repository context")
		case "release_name":
			if v, ok := c.text(f.val, fp); ok && v != "" {
				if !strings.Contains(v, "${{") && (!releaseNameRE.MatchString(v) || len(v) > 53) {
					c.errorf(f.val, fp, v, "is not a Helm release name: at most 53 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit")
					return true
				}
				h.ReleaseName = v
			}
		case "kube_context":
			h.KubeContext = st.contextName(f.val, fp, "a kubernetes context")
		case "namespace":
			h.Namespace = st.namespace(f.val, fp, "")
		case "helm_version":
			if v, ok := c.text(f.val, fp); ok && v != "" && !strings.HasPrefix(v, "3") && !strings.Contains(v, "${{") {
				c.errorf(f.val, fp, v, "is not Helm 3: Freshet runs Helm 3 (the Helm SDK); Helm 2 and Tiller are not supported")
			} else if ok && v != "" {
				c.warnf(f.key, fp, v, "is not used by Freshet: the runner's Helm 3 SDK runs the step")
			}
		case "custom_values":
			vals, ok := c.textList(f.val, fp, false)
			for i, v := range vals {
				if !ok {
					break
				}
				k, val, found := strings.Cut(v, "=")
				if !found || k == "" || !valueKeyRE.MatchString(k) {
					c.errorf(f.val, fmt.Sprintf("%s[%d]", fp, i), v, "is not KEY=VALUE: write the value's path with '_' for '.' and '__' for '_', e.g. image_tag=1.2")
					continue
				}
				h.Values = append(h.Values, customValueKey(k)+"="+val)
			}
		case "custom_value_files":
			h.ValueFiles, _ = c.textList(f.val, fp, false)
		case "cmd_ps":
			st.cmdPS(f.val, fp)
		case "working_directory":
			h.WorkingDir, _ = c.text(f.val, fp)
		case "credentials_in_arguments", "skip_cf_stable_helm_repo", "use_repos_for_auth_action":
			if _, ok := c.boolean(f.val, fp); ok {
				c.warnf(f.key, fp, "", "is not used by Freshet: repository credentials come from helm-repository contexts and are never put in URLs or arguments")
			}
		case "app_version":
			h.AppVersion, _ = c.text(f.val, fp)
		case "chart_subdir", "primary_helm_context":
			if _, ok := c.text(f.val, fp); ok {
				c.warnf(f.key, fp, "", "is not used by Freshet: it applies to Artifactory repositories and the auth action")
			}
		case "commands":
			c.errorf(f.key, fp, "", "is only for the auth action, which Freshet does not run: run helm in a freestyle step")
		default:
			return false
		}
		return true
	}
	return false
}

// customValueKey turns a custom_values key into Helm's --set path: '_' is '.', '__' is '_'.
func customValueKey(k string) string {
	const sentinel = "\x00"
	k = strings.ReplaceAll(k, "__", sentinel)
	k = strings.ReplaceAll(k, "_", ".")
	return strings.ReplaceAll(k, sentinel, "_")
}

// contextName reads the literal name of a context of kind what.
func (st *stepCompile) contextName(v *yaml.Node, fp, what string) string {
	c := st.c
	name, ok := c.text(v, fp)
	switch {
	case !ok:
		return ""
	case name == "":
		c.errorf(v, fp, "", "is empty: give the name of %s", what)
	case strings.Contains(name, "${{"):
		c.errorf(v, fp, name, "is a variable reference: name %s literally, so the pipeline's access to it is checked before the build starts", what)
	case !contextNameRE.MatchString(name):
		c.errorf(v, fp, name, "is not a context name: letters, digits, '.', '_' and '-', up to 63, starting with a letter or digit")
	default:
		return name
	}
	return ""
}

// namespace reads a Kubernetes namespace (def when empty).
func (st *stepCompile) namespace(v *yaml.Node, fp, def string) string {
	ns, ok := st.c.text(v, fp)
	if !ok || ns == "" {
		return def
	}
	if !strings.Contains(ns, "${{") && (!dnsLabelRE.MatchString(ns) || len(ns) > 63) {
		st.c.errorf(v, fp, ns, "is not a namespace name: up to 63 lower-case letters, digits and '-', starting and ending with a letter or digit")
		return def
	}
	return ns
}

// candidate reads a deploy step's candidate: {image, registry}.
func (st *stepCompile) candidate(v *yaml.Node, fp string) *Candidate {
	c := st.c
	if !c.mapping(v, fp, "a mapping with image and registry") {
		return nil
	}
	out := &Candidate{}
	for _, f := range c.entries(v, fp) {
		p := join(fp, f.name)
		switch f.name {
		case "image":
			out.Image, _ = c.text(f.val, p)
		case "registry":
			out.Registry, _ = c.text(f.val, p)
		default:
			c.errorf(f.key, p, "", "is not a field of a deploy candidate: valid fields are image, registry")
		}
	}
	if out.Image == "" {
		c.errorf(v, join(fp, "image"), "", "is missing: a candidate needs the image to deploy, often ${{BUILD_STEP_NAME}}")
	}
	return out
}

// deployTimeout reads a deploy step's timeout: seconds as Codefresh writes them ('150'), or a
// duration with a unit.
func (st *stepCompile) deployTimeout(v *yaml.Node, fp string) Duration {
	c := st.c
	s, ok := c.str(v, fp)
	if !ok {
		return Duration{DefaultDeployTimeout}
	}
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.Atoi(s); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d <= 0 || d > MaxStepTimeout {
		c.errorf(v, fp, s, "is not a rollout timeout: give seconds ('150') or a duration (2m30s), more than 0 and at most %s", fmtDuration(MaxStepTimeout))
		return Duration{DefaultDeployTimeout}
	}
	return Duration{d}
}

// cmdPS reads cmd_ps: the helm flags Freshet runs through the SDK; others are refused.
func (st *stepCompile) cmdPS(v *yaml.Node, fp string) {
	c, h := st.c, st.s.Helm
	s, ok := c.text(v, fp)
	if !ok {
		return
	}
	words := strings.Fields(s)
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, val, hasVal := strings.Cut(w, "=")
		needVal := name == "--timeout" || name == "--description" || name == "--history-max"
		if needVal && !hasVal {
			if i+1 >= len(words) {
				c.errorf(v, fp, w, "needs a value: write %s=VALUE", name)
				return
			}
			i++
			val = words[i]
		}
		switch name {
		case "--wait":
			h.Wait = true
		case "--atomic":
			h.Atomic, h.Wait = true, true
		case "--create-namespace":
			h.CreateNS = true
		case "--dry-run":
			h.DryRun = true
		case "--reset-values":
			h.ResetValues = true
		case "--reuse-values":
			h.ReuseValues = true
		case "--skip-crds":
			h.SkipCRDs = true
		case "--no-hooks":
			h.DisableHooks = true
		case "--description":
			h.Description = val
		case "--history-max":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				c.errorf(v, fp, w, "has --history-max %q: give a whole number, 0 for no limit", val)
				return
			}
			h.HistoryMax = &n
		case "--timeout":
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 || d > MaxStepTimeout {
				c.errorf(v, fp, val, "has a --timeout that is not a duration: write it with a unit (5m, 300s), at most %s", fmtDuration(MaxStepTimeout))
				return
			}
			h.Timeout = Duration{d}
		default:
			c.errorf(v, fp, w, "is not a helm flag Freshet runs: cmd_ps may hold %s", strings.Join(cmdPSFlags, ", "))
			return
		}
	}
}

// finishDeploy checks a deploy or helm step's required fields once every field is read.
func (st *stepCompile) finishDeploy(e kv) {
	c, s := st.c, st.s
	switch s.Type {
	case TypeDeploy:
		if s.Deploy == nil {
			s.Deploy = &Deploy{Namespace: "default", Timeout: Duration{DefaultDeployTimeout}}
		}
		d := s.Deploy
		if d.Kind == "" && !c.hasField(e, "kind") {
			c.errorf(e.key, join(s.Path, "kind"), "", "is missing: a deploy step needs kind: kubernetes")
		}
		if d.Cluster == "" && !c.hasField(e, "cluster") {
			c.errorf(e.key, join(s.Path, "cluster"), "", "is missing: a deploy step needs cluster, the name of a kubernetes context")
		}
		switch {
		case d.FilePath == "" && d.Service == "" && !c.hasField(e, "service") && !c.hasField(e, "file_path"):
			c.errorf(e.key, join(s.Path, "service"), "", "is missing: a deploy step needs service (the Deployment to roll the candidate out to) or file_path (manifests to apply)")
		case d.FilePath == "" && d.Service != "" && d.Candidate == nil && !c.hasField(e, "candidate"):
			c.errorf(e.key, join(s.Path, "candidate"), "", "is missing: a deploy step with service and no file_path needs candidate.image, the image to roll out")
		case d.Candidate != nil && d.Service == "" && d.FilePath != "" && !c.hasField(e, "service"):
			c.errorf(e.key, join(s.Path, "service"), "", "is missing: with file_path and candidate, service names the Deployment of the file whose image the candidate replaces")
		}
	case TypeHelm:
		if s.Helm == nil {
			s.Helm = &Helm{Action: HelmInstall}
		}
		h := s.Helm
		if h.ChartName == "" && !c.hasArg(e, "chart_name") {
			c.errorf(e.key, join(s.Path, "chart_name"), "", "is missing: a helm step needs chart_name (a chart directory or archive in the workspace, or a chart of the repository)")
		}
		if h.Action == HelmLint || h.Action == HelmPush || h.Action == "" { // no cluster; a bad action was reported
			return
		}
		if h.ReleaseName == "" && !c.hasArg(e, "release_name") {
			c.errorf(e.key, join(s.Path, "release_name"), "", "is missing: helm %s needs release_name", h.Action)
		}
		if h.KubeContext == "" && !c.hasArg(e, "kube_context") {
			c.errorf(e.key, join(s.Path, "kube_context"), "", "is missing: helm %s needs kube_context, the name of a kubernetes context", h.Action)
		}
		if h.ChartVersion != "" && h.ChartRepoURL == "" && h.RepoContext == "" && !strings.Contains(h.ChartVersion, "${{") {
			c.errorf(e.key, join(s.Path, "chart_version"), h.ChartVersion, "needs a chart repository: give chart_repo_url or helm_repository_context (a chart in the workspace has the version it has)")
		}
	}
}

// hasField reports whether step entry e writes field name (so a missing value is not
// reported twice: its own error was).
func (c *compiler) hasField(e kv, name string) bool {
	if e.val == nil || e.val.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		if e.val.Content[i].Value == name {
			return true
		}
	}
	return false
}

// hasArg is hasField for a field written at the step or under its arguments.
func (c *compiler) hasArg(e kv, name string) bool {
	if c.hasField(e, name) {
		return true
	}
	if e.val == nil || e.val.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		if e.val.Content[i].Value == "arguments" {
			return c.hasField(kv{val: e.val.Content[i+1]}, name)
		}
	}
	return false
}

// Clusters lists the kubernetes contexts p's deploy and helm steps name, with the path of
// the first step that names each, in order: what the control plane checks before a build
// starts.
func (p *Pipeline) Clusters() []ClusterUse {
	var out []ClusterUse
	seen := map[string]bool{}
	var walk func([]*Step)
	walk = func(steps []*Step) {
		for _, s := range steps {
			name := ""
			switch {
			case s.Deploy != nil:
				name = s.Deploy.Cluster
			case s.Helm != nil && s.Helm.Action != HelmLint && s.Helm.Action != HelmPush:
				name = s.Helm.KubeContext
			}
			if name != "" && !seen[name] {
				seen[name] = true
				out = append(out, ClusterUse{Context: name, Step: s.Name, Path: s.Path})
			}
			walk(s.Parallel)
		}
	}
	walk(p.Steps)
	return out
}

// ClusterUse is a kubernetes context a step names.
type ClusterUse struct {
	Context    string
	Step, Path string // the first step that names it
}
