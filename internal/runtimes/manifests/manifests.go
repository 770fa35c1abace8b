// Package manifests generates the Kubernetes objects a hybrid runtime runs from: its
// Namespace, ServiceAccount and RBAC, the Secret with its token, the Deployment running
// `freshet runtime`, the app-proxy Service and, in ingress mode, an Ingress. `freshet runtime
// manifests` prints them; the installer applies them with server-side apply. It also makes a
// runner's objects (RunnerObjects: `freshet runner install`), with the Role its caller hands
// in (the kubernetes executor's).
package manifests

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Defaults.
const (
	DefaultNamespace = "freshet-runtime"
	DefaultImage     = "freshet/freshet"
	TokenSecretName  = "freshet-runtime-token"
	AppProxyPort     = 8080
	managedBy        = "freshet"
	// RuntimeIDAnnotation on the token Secret names the registered runtime it belongs to, so
	// an installer run again knows the cluster already holds that runtime's token.
	RuntimeIDAnnotation = "freshet.dev/runtime-id"
	// InstanceLabel carries the runtime's name on every object.
	InstanceLabel = "app.kubernetes.io/instance"
	// ManagedByLabel is "freshet" on every object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// DataDir is where the runtime keeps its repository cache (an emptyDir).
	DataDir = "/tmp/freshet-runtime"
)

// Options describe one runtime installation.
type Options struct {
	Name         string // the runtime's name
	Namespace    string
	Image        string // the freshet image; the tag defaults to Version
	Version      string
	Server       string // the control plane URL the runtime dials
	Token        string // the runtime token; empty leaves the Secret out (create it yourself)
	AccessMode   string // tunnel or ingress
	IngressHost  string // ingress mode
	IngressClass string // ingress mode, optional
	RuntimeID    string // annotated on the token Secret
	Repo         string // the installation repository
	GitToken     string // the installation repository's token, kept in the token Secret
	// WatchClusterApps runs the runtime with --watch-cluster-apps.
	WatchClusterApps bool
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate names the first bad option.
func (o *Options) Validate() error {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	o.Image = defaultImage(o.Image, o.Version)
	switch {
	case !dns1123.MatchString(o.Name):
		return errdefs.Invalid("name", o.Name, "is not a runtime name (lowercase letters, digits and '-')")
	case !dns1123.MatchString(o.Namespace):
		return errdefs.Invalid("namespace", o.Namespace, "is not a Kubernetes namespace name")
	case !strings.HasPrefix(o.Server, "http://") && !strings.HasPrefix(o.Server, "https://"):
		return errdefs.Invalid("server", o.Server, "is not the control plane's http(s) URL")
	}
	switch o.AccessMode {
	case "", "tunnel":
		o.AccessMode = "tunnel"
	case "ingress":
		if o.IngressHost == "" {
			return errdefs.Invalid("ingress-host", "", "is required in ingress mode")
		}
	default:
		return errdefs.Invalid("access-mode", o.AccessMode, "is not tunnel or ingress")
	}
	return nil
}

// Object is one Kubernetes object as a generic map.
type Object = map[string]any

// Objects returns the runtime's objects in apply order.
func Objects(o Options) ([]Object, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	labels := map[string]any{"app.kubernetes.io/name": "freshet-runtime", InstanceLabel: o.Name, ManagedByLabel: managedBy}
	meta := func(name string, namespaced bool) map[string]any {
		m := map[string]any{"name": name, "labels": labels}
		if namespaced {
			m["namespace"] = o.Namespace
		}
		return m
	}
	clusterName := "freshet-runtime-" + o.Name
	objs := []Object{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(o.Namespace, false)},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("freshet-runtime", true)},
		// The GitOps engine applies whatever applications declare, so it needs broad rights in the
		// runtime's own cluster, like Argo CD's application controller. Managed clusters get their
		// own, narrower service account (freshet cluster add).
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta(clusterName, false),
			"rules": []any{
				map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"*"}},
				map[string]any{"nonResourceURLs": []any{"*"}, "verbs": []any{"get", "list"}},
			}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": meta(clusterName, false),
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": clusterName},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "freshet-runtime", "namespace": o.Namespace}}},
	}
	if o.Token != "" {
		m := meta(TokenSecretName, true)
		if o.RuntimeID != "" {
			m["annotations"] = map[string]any{RuntimeIDAnnotation: o.RuntimeID}
		}
		data := map[string]any{"token": o.Token}
		if o.GitToken != "" {
			data["gitToken"] = o.GitToken
		}
		objs = append(objs, Object{"apiVersion": "v1", "kind": "Secret", "metadata": m, "type": "Opaque", "stringData": data})
	}
	args := []any{"runtime", "--server", o.Server, "--token-file", "/etc/freshet/token", "--access-mode", o.AccessMode,
		"--listen", fmt.Sprintf(":%d", AppProxyPort), "--log-format", "json", "--data-dir", DataDir}
	if o.AccessMode == "ingress" {
		args = append(args, "--ingress-url", "https://"+o.IngressHost)
	}
	if o.WatchClusterApps {
		args = append(args, "--watch-cluster-apps")
	}
	if o.Repo != "" {
		args = append(args, "--repo", o.Repo)
		if o.GitToken != "" {
			args = append(args, "--git-token-file", "/etc/freshet/gitToken")
		}
	}
	podLabels := map[string]any{"app.kubernetes.io/name": "freshet-runtime", "app.kubernetes.io/instance": o.Name}
	objs = append(objs,
		Object{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("freshet-runtime", true),
			"spec": map[string]any{
				"replicas": 1,
				"selector": map[string]any{"matchLabels": podLabels},
				"strategy": map[string]any{"type": "Recreate"},
				"template": map[string]any{
					"metadata": map[string]any{"labels": podLabels},
					"spec": map[string]any{
						"serviceAccountName": "freshet-runtime",
						"securityContext":    map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
						"containers": []any{map[string]any{
							"name": "runtime", "image": o.Image, "args": args,
							"ports":          []any{map[string]any{"name": "app-proxy", "containerPort": AppProxyPort}},
							"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/app-proxy/healthz", "port": "app-proxy"}},
							"resources":      map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "1Gi"}},
							"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
								"capabilities": map[string]any{"drop": []any{"ALL"}}},
							"volumeMounts": []any{map[string]any{"name": "token", "mountPath": "/etc/freshet", "readOnly": true},
								map[string]any{"name": "tmp", "mountPath": "/tmp"}},
						}},
						"volumes": []any{
							map[string]any{"name": "token", "secret": map[string]any{"secretName": TokenSecretName}},
							map[string]any{"name": "tmp", "emptyDir": map[string]any{}},
						},
					},
				},
			}},
		Object{"apiVersion": "v1", "kind": "Service", "metadata": meta("freshet-app-proxy", true),
			"spec": map[string]any{"selector": podLabels, "ports": []any{map[string]any{"name": "app-proxy", "port": AppProxyPort, "targetPort": "app-proxy"}}}},
	)
	if o.AccessMode == "ingress" {
		spec := map[string]any{"rules": []any{map[string]any{"host": o.IngressHost, "http": map[string]any{"paths": []any{map[string]any{
			"path": "/app-proxy", "pathType": "Prefix",
			"backend": map[string]any{"service": map[string]any{"name": "freshet-app-proxy", "port": map[string]any{"name": "app-proxy"}}},
		}}}}}}
		if o.IngressClass != "" {
			spec["ingressClassName"] = o.IngressClass
		}
		objs = append(objs, Object{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta("freshet-app-proxy", true), "spec": spec})
	}
	return objs, nil
}

// YAML renders objects as one multi-document YAML stream.
func YAML(objs []Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
