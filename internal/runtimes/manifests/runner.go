package manifests

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/helmchart"
)

// Runner installation defaults.
const (
	DefaultRunnerNamespace = "freshet-runner"
	// RunnerName is the name of the runner's ServiceAccount, Role, RoleBinding and Deployment
	// (the Role's name in the executor's RoleYAML).
	RunnerName = "freshet-runner"
	// RunnerTokenSecretName holds the runner's token (key "token").
	RunnerTokenSecretName = "freshet-runner-token"
	// RunnerIDAnnotation on the token Secret names the registered runner it belongs to.
	RunnerIDAnnotation = "freshet.dev/runner-id"
)

// RunnerOptions describe one runner installation: a Deployment running `freshet runner
// --executor kubernetes` in its namespace, where its builds' pods run too.
type RunnerOptions struct {
	Name string // the runner's name (as registered)
	// RoleYAML is the namespaced Role the runner's service account is bound to: the kubernetes
	// executor's (kubernetes.RoleYAML, the one definition of what it needs), named RunnerName.
	RoleYAML  string
	Namespace string
	Image     string // the freshet image; the tag defaults to Version
	Version   string
	Server    string // the control plane URL the runner dials
	Token     string // the runner token; empty leaves the Secret out
	RunnerID  string // annotated on the token Secret
	// Concurrency is how many builds the runner runs at once (0: the runner's default).
	Concurrency int
	// Labels are the runner's labels, which pipelines select runners by.
	Labels map[string]string
	// ExecutorArgs are more flags for the kubernetes executor (--kube-*), e.g. the step pods'
	// node selector, tolerations, default and helper images.
	ExecutorArgs []string
	// HostNetwork runs the runner's pod on its node's network: for a control plane that only
	// the node reaches (on its loopback, in the loopback test cluster).
	HostNetwork bool
	// NodeSelector and Tolerations place the runner's own pod.
	NodeSelector map[string]string
	Tolerations  []Toleration
	// Env is more environment of the runner's container, e.g. HTTP_PROXY and NO_PROXY for a
	// runner behind a proxy, or KUBERNETES_SERVICE_HOST/PORT for a cluster whose kubernetes
	// Service its pod cannot reach (the loopback test cluster has no kube-proxy). FRESHET_*
	// variables are the installation's own.
	Env map[string]string
}

// envName is a variable name the runner's container may be given.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Toleration is one toleration of the runner's pod.
type Toleration struct {
	Key, Value, Effect string
}

// Validate names the first bad option, filling defaults.
func (o *RunnerOptions) Validate() error {
	if o.Namespace == "" {
		o.Namespace = DefaultRunnerNamespace
	}
	o.Image = defaultImage(o.Image, o.Version)
	switch {
	case !dns1123.MatchString(o.Name):
		return errdefs.Invalid("name", o.Name, "is not a runner name (lowercase letters, digits and '-', at most 63)")
	case !dns1123.MatchString(o.Namespace):
		return errdefs.Invalid("namespace", o.Namespace, "is not a Kubernetes namespace name")
	case !strings.HasPrefix(o.Server, "http://") && !strings.HasPrefix(o.Server, "https://"):
		return errdefs.Invalid("server", o.Server, "is not the control plane's http(s) URL")
	case o.Concurrency < 0 || o.Concurrency > 256:
		return errdefs.Invalid("concurrency", fmt.Sprint(o.Concurrency), "is not 1 to 256 (or 0 for the runner's default)")
	}
	for _, a := range o.ExecutorArgs {
		if !strings.HasPrefix(a, "--kube-") || !strings.Contains(a, "=") {
			return errdefs.Invalid("executor-arg", a, "is not a --kube-NAME=VALUE flag of the kubernetes executor")
		}
		if strings.HasPrefix(a, "--kube-in-cluster") || strings.HasPrefix(a, "--kube-kubeconfig") || strings.HasPrefix(a, "--kube-context") {
			return errdefs.Invalid("executor-arg", a, "is set by the installation (the runner uses its pod's service account)")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		switch {
		case !envName.MatchString(k):
			return errdefs.Invalid("env", k, "is not an environment variable name (letters, digits and '_', not starting with a digit)")
		case strings.HasPrefix(k, "FRESHET_"):
			return errdefs.Invalid("env", k, "is set by the installation (FRESHET_* variables are the runner's own)")
		}
	}
	for i, t := range o.Tolerations {
		switch t.Effect {
		case "NoSchedule", "PreferNoSchedule", "NoExecute", "":
		default:
			return errdefs.Invalid(fmt.Sprintf("toleration[%d].effect", i), t.Effect, "is not NoSchedule, PreferNoSchedule or NoExecute")
		}
	}
	return nil
}

// defaultImage adds the version's tag to an image without tag or digest (latest for a
// development build).
func defaultImage(image, version string) string {
	if image == "" {
		image = DefaultImage
	}
	if !strings.Contains(image[strings.LastIndex(image, "/")+1:], ":") && !strings.Contains(image, "@") {
		tag := version
		if tag == "" || tag == "dev" {
			tag = "latest"
		}
		image += ":" + tag
	}
	return image
}

// runnerRole checks that roleYAML is a Role named RunnerName.
func runnerRole(roleYAML string) error {
	var role Object
	if err := yaml.Unmarshal([]byte(roleYAML), &role); err != nil {
		return errdefs.Invalid("roleYAML", "", err.Error())
	}
	md, _ := role["metadata"].(map[string]any)
	if role["kind"] != "Role" || md == nil || md["name"] != RunnerName {
		return errdefs.Invalid("roleYAML", fmt.Sprint(role["kind"]), "is not a Role named "+RunnerName)
	}
	return nil
}

// RunnerRoleFile is the chart's file that holds the runner's Role (the executor's role.yaml).
const RunnerRoleFile = "files/executor-role.yaml"

// RunnerObjects returns the runner's objects in apply order — its Namespace, ServiceAccount,
// the executor's Role and a RoleBinding, the Secret with its token, and the Deployment — from
// the freshet-runner chart (package charts) rendered for the options. A RoleYAML given
// replaces the chart's copy of the executor's Role.
func RunnerObjects(o RunnerOptions) ([]Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ch, err := helmchart.Load(charts.Runner)
	if err != nil {
		return nil, err
	}
	if o.RoleYAML != "" {
		if err := runnerRole(o.RoleYAML); err != nil {
			return nil, err
		}
		helmchart.SetFile(ch, RunnerRoleFile, []byte(o.RoleYAML))
	}
	return helmchart.Render(ch, helmchart.Release{Name: o.Name, Namespace: o.Namespace}, o.Values())
}

// Values are the freshet-runner chart's values for the options (Validate them first): what
// `helm install` would be given to install the same runner.
func (o RunnerOptions) Values() map[string]any {
	labels := map[string]any{}
	for k, v := range o.Labels {
		labels[k] = v
	}
	env := map[string]any{}
	for k, v := range o.Env {
		env[k] = v
	}
	nodeSelector := map[string]any{}
	for k, v := range o.NodeSelector {
		nodeSelector[k] = v
	}
	args := []any{}
	for _, a := range o.ExecutorArgs {
		args = append(args, a)
	}
	tols := []any{}
	for _, t := range o.Tolerations {
		tol := map[string]any{"key": t.Key, "operator": "Equal", "value": t.Value}
		if t.Value == "" {
			tol = map[string]any{"key": t.Key, "operator": "Exists"}
		}
		if t.Effect != "" {
			tol["effect"] = t.Effect
		}
		tols = append(tols, tol)
	}
	return map[string]any{
		"name":            o.Name,
		"server":          o.Server,
		"image":           map[string]any{"repository": o.Image},
		"token":           map[string]any{"value": o.Token, "runnerID": o.RunnerID},
		"concurrency":     o.Concurrency,
		"labels":          labels,
		"executorArgs":    args,
		"hostNetwork":     o.HostNetwork,
		"nodeSelector":    nodeSelector,
		"tolerations":     tols,
		"env":             env,
		"createNamespace": true,
	}
}
