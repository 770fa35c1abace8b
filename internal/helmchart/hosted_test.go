package helmchart_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/helmchart"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/server"
)

// rendered is what the freshet chart renders for one golden case's values.
type rendered struct {
	dep      appsv1.Deployment
	roles    []rbacv1.ClusterRole
	bindings []rbacv1.ClusterRoleBinding
}

func renderCase(t *testing.T, name string) rendered {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	ch, err := helmchart.Load(charts.Freshet)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(ch, helmchart.Release{Name: "freshet", Namespace: "freshet"}, values)
	if err != nil {
		t.Fatal(err)
	}
	var r rendered
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var into any
		switch o["kind"] {
		case "Deployment":
			into = &r.dep
		case "ClusterRole":
			r.roles = append(r.roles, rbacv1.ClusterRole{})
			into = &r.roles[len(r.roles)-1]
		case "ClusterRoleBinding":
			r.bindings = append(r.bindings, rbacv1.ClusterRoleBinding{})
			into = &r.bindings[len(r.bindings)-1]
		default:
			continue
		}
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// hostedOptions parses the container's --hosted-runtimes* flags the way `freshet server`
// does, and validates them with the public URL the container is given.
func hostedOptions(t *testing.T, c corev1.Container) server.HostedOptions {
	t.Helper()
	var o server.HostedOptions
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	o.BindFlags(fs)
	var args []string
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--hosted-runtimes") {
			args = append(args, a)
		}
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the server refuses the chart's flags %q: %v", args, err)
	}
	public := ""
	for _, e := range c.Env {
		if e.Name == "FRESHET_PUBLIC_URL" {
			public = e.Value
		}
	}
	if err := o.Validate(public, netpolicy.Options{}); err != nil {
		t.Fatalf("the server refuses the chart's flags %q: %v", args, err)
	}
	return o
}

// In-cluster: the server gets --hosted-runtimes=kubernetes and no kubeconfig (it uses the
// in-cluster configuration), the pod mounts its ServiceAccount's token, and the chart's
// ClusterRole is bound to that ServiceAccount. The placement and storage values reach the
// server as the options they mean.
func TestHostedRuntimesInCluster(t *testing.T) {
	r := renderCase(t, "freshet__hosted-in-cluster")
	pod := r.dep.Spec.Template.Spec
	o := hostedOptions(t, pod.Containers[0])
	if o.Mode != server.HostedKubernetes || o.Kubeconfig != "" {
		t.Errorf("mode %q kubeconfig %q, want kubernetes in-cluster", o.Mode, o.Kubeconfig)
	}
	if o.NamespacePrefix != "hosted-" || o.Image != "registry.example.com/freshet/freshet:v1.4.0" || o.Server != "" ||
		o.StorageSize != "2Gi" || o.StorageClass != "fast-ssd" || len(o.NodeSelector) != 1 || o.NodeSelector["pool"] != "hosted-runtimes" {
		t.Errorf("options %+v", o)
	}
	if want := []string{"pool=hosted-runtimes:NoSchedule", "dedicated:NoExecute"}; !slices.Equal(o.Tolerations, want) {
		t.Errorf("tolerations %q, want %q", o.Tolerations, want)
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Error("the pod mounts no ServiceAccount token: the in-cluster configuration has none to use")
	}
	if len(r.roles) != 1 || len(r.bindings) != 1 {
		t.Fatalf("%d ClusterRoles, %d ClusterRoleBindings, want one of each", len(r.roles), len(r.bindings))
	}
	b := r.bindings[0]
	if b.RoleRef.Kind != "ClusterRole" || b.RoleRef.Name != r.roles[0].Name || len(b.Subjects) != 1 ||
		b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != pod.ServiceAccountName || b.Subjects[0].Namespace != "freshet" {
		t.Errorf("the binding %+v does not bind ClusterRole %s to the pod's ServiceAccount %s", b, r.roles[0].Name, pod.ServiceAccountName)
	}
}

// In-cluster with hostedRuntimes.rbac.create false: the operator grants the ServiceAccount the
// provisioner's rights, so the chart makes no ClusterRole or binding; the server still uses the
// in-cluster configuration, with the pod's token.
func TestHostedRuntimesInClusterOwnRBAC(t *testing.T) {
	r := renderCase(t, "freshet__hosted-in-cluster-own-rbac")
	pod := r.dep.Spec.Template.Spec
	o := hostedOptions(t, pod.Containers[0])
	if o.Mode != server.HostedKubernetes || o.Kubeconfig != "" {
		t.Errorf("mode %q kubeconfig %q, want kubernetes in-cluster", o.Mode, o.Kubeconfig)
	}
	if len(r.roles)+len(r.bindings) > 0 {
		t.Errorf("%d ClusterRoles, %d bindings with rbac.create false, want none", len(r.roles), len(r.bindings))
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Error("the pod mounts no ServiceAccount token: the in-cluster configuration has none to use")
	}
}

// From a kubeconfig Secret: the server reads the Secret's key, mounted read-only, and the
// chart grants nothing on its own cluster (nor mounts a token).
func TestHostedRuntimesFromKubeconfigSecret(t *testing.T) {
	r := renderCase(t, "freshet__hosted-kubeconfig")
	pod := r.dep.Spec.Template.Spec
	o := hostedOptions(t, pod.Containers[0])
	if o.Mode != server.HostedKubernetes || o.Server != "https://freshet.internal.example.com" || o.StorageSize != "0" {
		t.Errorf("options %+v", o)
	}
	if len(r.roles)+len(r.bindings) > 0 {
		t.Errorf("%d ClusterRoles, %d bindings with a kubeconfig of another cluster, want none", len(r.roles), len(r.bindings))
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a ServiceAccount token it has no use for")
	}
	var mount *corev1.VolumeMount
	for i, m := range pod.Containers[0].VolumeMounts {
		if strings.HasPrefix(o.Kubeconfig, m.MountPath+"/") {
			mount = &pod.Containers[0].VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly {
		t.Fatalf("--hosted-runtimes-kubeconfig %s is on no read-only mount: %+v", o.Kubeconfig, pod.Containers[0].VolumeMounts)
	}
	for _, v := range pod.Volumes {
		if v.Name != mount.Name {
			continue
		}
		s := v.Secret
		if s == nil || s.SecretName != "platform-cluster" || len(s.Items) != 1 || s.Items[0].Key != "config" ||
			mount.MountPath+"/"+s.Items[0].Path != o.Kubeconfig {
			t.Errorf("volume %+v: want key config of Secret platform-cluster at %s", v, o.Kubeconfig)
		}
		return
	}
	t.Errorf("no volume %s", mount.Name)
}
