package manifests

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
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

// runnerRole returns roleYAML as an object in namespace, labelled for the instance.
func runnerRole(roleYAML, namespace string, labels map[string]any) (Object, error) {
	var role Object
	if err := yaml.Unmarshal([]byte(roleYAML), &role); err != nil {
		return nil, errdefs.Invalid("roleYAML", "", err.Error())
	}
	md, _ := role["metadata"].(map[string]any)
	if role["kind"] != "Role" || md == nil || md["name"] != RunnerName {
		return nil, errdefs.Invalid("roleYAML", fmt.Sprint(role["kind"]), "is not a Role named "+RunnerName)
	}
	md["namespace"] = namespace
	md["labels"] = labels
	return role, nil
}

// RunnerObjects returns the runner's objects in apply order: its Namespace, ServiceAccount,
// the executor's Role and a RoleBinding, the Secret with its token, and the Deployment.
func RunnerObjects(o RunnerOptions) ([]Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	labels := map[string]any{"app.kubernetes.io/name": RunnerName, InstanceLabel: o.Name, ManagedByLabel: managedBy}
	meta := func(name string, namespaced bool) map[string]any {
		m := map[string]any{"name": name, "labels": labels}
		if namespaced {
			m["namespace"] = o.Namespace
		}
		return m
	}
	role, err := runnerRole(o.RoleYAML, o.Namespace, labels)
	if err != nil {
		return nil, err
	}
	objs := []Object{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(o.Namespace, false)},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(RunnerName, true)},
		role,
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(RunnerName, true),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RunnerName},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": RunnerName, "namespace": o.Namespace}}},
	}
	if o.Token != "" {
		m := meta(RunnerTokenSecretName, true)
		if o.RunnerID != "" {
			m["annotations"] = map[string]any{RunnerIDAnnotation: o.RunnerID}
		}
		objs = append(objs, Object{"apiVersion": "v1", "kind": "Secret", "metadata": m, "type": "Opaque",
			"stringData": map[string]any{"token": o.Token}})
	}
	args := []any{"runner", "--server", o.Server, "--name", o.Name, "--executor", "kubernetes", "--kube-in-cluster",
		"--kube-namespace", o.Namespace, "--log-format", "json"}
	if o.Concurrency > 0 {
		args = append(args, "--concurrency", fmt.Sprint(o.Concurrency))
	}
	if len(o.Labels) > 0 {
		var kv []string
		for k, v := range o.Labels {
			kv = append(kv, k+"="+v)
		}
		slices.Sort(kv)
		args = append(args, "--labels", strings.Join(kv, ","))
	}
	for _, a := range o.ExecutorArgs {
		args = append(args, a) // []any: one by one
	}
	env := []any{map[string]any{"name": "FRESHET_RUNNER_TOKEN", "valueFrom": map[string]any{
		"secretKeyRef": map[string]any{"name": RunnerTokenSecretName, "key": "token"}}}}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		env = append(env, map[string]any{"name": k, "value": o.Env[k]})
	}
	podLabels := map[string]any{"app.kubernetes.io/name": RunnerName, InstanceLabel: o.Name}
	podSpec := map[string]any{
		"serviceAccountName": RunnerName,
		"securityContext":    map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"containers": []any{map[string]any{
			"name": "runner", "image": o.Image, "args": args,
			"env":       env,
			"resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}, "limits": map[string]any{"memory": "512Mi"}},
			"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
				"capabilities": map[string]any{"drop": []any{"ALL"}}},
			"volumeMounts": []any{map[string]any{"name": "tmp", "mountPath": "/tmp"}},
		}},
		"volumes": []any{map[string]any{"name": "tmp", "emptyDir": map[string]any{}}},
		// A runner that is told to stop finishes shipping its steps' logs first.
		"terminationGracePeriodSeconds": 30,
	}
	if o.HostNetwork {
		podSpec["hostNetwork"] = true
		podSpec["dnsPolicy"] = "ClusterFirstWithHostNet"
	}
	if len(o.NodeSelector) > 0 {
		ns := map[string]any{}
		for k, v := range o.NodeSelector {
			ns[k] = v
		}
		podSpec["nodeSelector"] = ns
	}
	if len(o.Tolerations) > 0 {
		var ts []any
		for _, t := range o.Tolerations {
			tol := map[string]any{"key": t.Key, "operator": "Equal", "value": t.Value}
			if t.Value == "" {
				tol = map[string]any{"key": t.Key, "operator": "Exists"}
			}
			if t.Effect != "" {
				tol["effect"] = t.Effect
			}
			ts = append(ts, tol)
		}
		podSpec["tolerations"] = ts
	}
	objs = append(objs, Object{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(RunnerName, true),
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": podLabels},
			// One runner per token: never two pods at once.
			"strategy": map[string]any{"type": "Recreate"},
			"template": map[string]any{"metadata": map[string]any{"labels": podLabels}, "spec": podSpec},
		}})
	return objs, nil
}
