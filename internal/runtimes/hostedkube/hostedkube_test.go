package hostedkube

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
)

// Bad options name the flag, the value and what is valid.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string // "" when valid
	}{
		{Options{Server: "https://freshet.example.test"}, ""},
		{Options{Server: "https://freshet.example.test", NamespacePrefix: "tenant-rt-"}, ""},
		{Options{Server: "freshet.example.test"}, "hosted-runtimes-server"},
		{Options{Server: "https://x", NamespacePrefix: "Hosted-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "hosted"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "-hosted-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "host_ed-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: strings.Repeat("a", 30) + "-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NodeSelector: map[string]string{"pool": "hosted", "freshet.dev/real-node": "true"}}, ""},
		{Options{Server: "https://x", NodeSelector: map[string]string{"bad key": "x"}}, "hosted-runtimes-node-selector"},
		{Options{Server: "https://x", NodeSelector: map[string]string{"pool": "not a value"}}, "hosted-runtimes-node-selector"},
		{Options{Server: "https://x", Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}, ""},
		{Options{Server: "https://x", Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "x", Effect: "Sometimes"}}}, "hosted-runtimes-toleration"},
		{Options{Server: "https://x", Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpExists, Value: "x", Effect: corev1.TaintEffectNoExecute}}}, "hosted-runtimes-toleration"},
		{Options{Server: "https://x", StorageSize: "20Gi", StorageClass: "fast-ssd"}, ""},
		{Options{Server: "https://x", StorageSize: "500Mi", StorageClass: "ebs.csi.aws.com"}, ""},
		{Options{Server: "https://x", StorageSize: "big"}, "hosted-runtimes-storage-size"},
		{Options{Server: "https://x", StorageSize: "0"}, ""},
		{Options{Server: "https://x", StorageSize: "0Mi"}, ""},
		{Options{Server: "https://x", StorageSize: "-1Gi"}, "hosted-runtimes-storage-size"},
		{Options{Server: "https://x", StorageSize: "0", StorageClass: "fast-ssd"}, "hosted-runtimes-storage-class"},
		{Options{Server: "https://x", StorageSize: "1 Gi"}, "hosted-runtimes-storage-size"},
		{Options{Server: "https://x", StorageClass: "Fast_SSD"}, "hosted-runtimes-storage-class"},
		{Options{Server: "https://x", Net: netpolicy.Options{FileRepoDirs: []string{"/srv/git"}, PrivateNetworks: []string{"10.0.0.0/8", "loopback"}, ProviderHosts: []string{"*"}}}, ""},
		{Options{Server: "https://x", Net: netpolicy.Options{FileRepoDirs: []string{"srv/git"}}}, netpolicy.FlagFileRepos},
		{Options{Server: "https://x", Net: netpolicy.Options{PrivateNetworks: []string{"the office"}}}, netpolicy.FlagPrivateNetworks},
		{Options{Server: "https://x", Net: netpolicy.Options{ProviderHosts: []string{"https://gitlab.corp"}}}, netpolicy.FlagProviderHosts},
	} {
		err := tc.o.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.o, err)
			}
			if tc.o.StorageSize == "" {
				t.Errorf("%+v: the storage size has no default", tc.o)
			}
			continue
		}
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%+v: %v, want an invalid %s", tc.o, err, tc.field)
		}
	}
}

// --hosted-runtimes-toleration takes KEY[=VALUE]:EFFECT, as the kubernetes executor's
// --kube-toleration does; anything else names the flag, the value and the syntax.
func TestParseToleration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want corev1.Toleration // zero: invalid
	}{
		{"freshet.dev/real-node=true:NoSchedule", corev1.Toleration{Key: "freshet.dev/real-node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		{"dedicated:NoExecute", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		{"pool=:PreferNoSchedule", corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Effect: corev1.TaintEffectPreferNoSchedule}},
		{"dedicated", corev1.Toleration{}},
		{"dedicated=x", corev1.Toleration{}},
		{"dedicated=x:Never", corev1.Toleration{}},
		{"=x:NoSchedule", corev1.Toleration{}},
		{"bad key=x:NoSchedule", corev1.Toleration{}},
		{"k=not a value:NoSchedule", corev1.Toleration{}},
	} {
		got, err := ParseToleration(tc.in)
		if tc.want.Key == "" {
			var fe *errdefs.FieldError
			if !errors.As(err, &fe) || fe.Field != "hosted-runtimes-toleration" || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("%q: %v, want an invalid hosted-runtimes-toleration naming the value", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// The objects of a hosted runtime keep its data dir on a claim of the operator's size and
// class, or, with the storage size 0, on the pod's emptyDir and no claim; the options' digest
// tells the two apart, so a provisioner switched either way applies the runtimes again.
func TestObjectsPersistence(t *testing.T) {
	cr := runtimes.HostedCredential{RuntimeID: "rt_01hosted", AccountID: "acc_1", Name: "edge", Token: "frt_a_b", UpdatedAt: time.Unix(1700000000, 0)}
	render := func(size, class string) ([]*unstructured.Unstructured, string) {
		t.Helper()
		c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{Server: "https://freshet.example.test", StorageSize: size, StorageClass: class})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := c.Objects(cr)
		if err != nil {
			t.Fatal(err)
		}
		return objs, c.opts.digest()
	}
	find := func(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
		for _, u := range objs {
			if u.GetKind() == kind {
				return u
			}
		}
		return nil
	}
	dataVolume := func(objs []*unstructured.Unstructured) map[string]any {
		t.Helper()
		vols, _, _ := unstructured.NestedSlice(find(objs, "Deployment").Object, "spec", "template", "spec", "volumes")
		for _, v := range vols {
			if m := v.(map[string]any); m["name"] == "data" {
				return m
			}
		}
		return nil
	}

	on, onDigest := render("7Gi", "fast-ssd")
	pvc := find(on, "PersistentVolumeClaim")
	if pvc == nil {
		t.Fatal("no data claim with --hosted-runtimes-storage-size 7Gi")
	}
	size, _, _ := unstructured.NestedString(pvc.Object, "spec", "resources", "requests", "storage")
	class, _, _ := unstructured.NestedString(pvc.Object, "spec", "storageClassName")
	if size != "7Gi" || class != "fast-ssd" || pvc.GetLabels()[LabelRuntimeID] != cr.RuntimeID {
		t.Errorf("data claim %s of class %q, labels %v; want 7Gi, fast-ssd and the runtime's labels", size, class, pvc.GetLabels())
	}
	if v := dataVolume(on); v == nil || v["persistentVolumeClaim"] == nil {
		t.Errorf("the data volume is %v, want the claim", v)
	}

	for _, zero := range []string{"0", "0Gi"} {
		off, offDigest := render(zero, "")
		if pvc := find(off, "PersistentVolumeClaim"); pvc != nil {
			t.Errorf("storage size %s: a data claim %s", zero, pvc.GetName())
		}
		if v := dataVolume(off); v != nil {
			t.Errorf("storage size %s: a data volume %v; the data dir should be on the pod's /tmp emptyDir", zero, v)
		}
		args, _, _ := unstructured.NestedSlice(find(off, "Deployment").Object, "spec", "template", "spec", "containers")
		if !strings.Contains(fmt.Sprint(args), manifests.DataDir) || !strings.Contains(fmt.Sprint(args), HostedFlag) {
			t.Errorf("storage size %s: the runtime's container %v lacks --data-dir %s or %s", zero, args, manifests.DataDir, HostedFlag)
		}
		if offDigest == onDigest {
			t.Errorf("storage size %s: the options' digest is the one with a claim: runtimes are not applied again", zero)
		}
	}
	_, d0 := render("0", "")
	_, d0Gi := render("0Gi", "")
	if d0 != d0Gi {
		t.Error("0 and 0Gi digest differently: a restart with the other spelling would apply every runtime again")
	}
}

// Without --hosted-runtimes-kubeconfig the provisioner uses the in-cluster configuration (the
// pod's ServiceAccount, which the freshet chart binds to its ClusterRole); outside a pod that
// fails naming the flag, and a kubeconfig given is used instead.
func TestRESTConfigInClusterOrKubeconfig(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	if _, err := RESTConfig(""); err == nil || !strings.Contains(err.Error(), "hosted-runtimes-kubeconfig") {
		t.Errorf("no kubeconfig outside a cluster: %v, want an error naming hosted-runtimes-kubeconfig", err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: p, cluster: {server: "https://platform.example.test:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: p, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(kc)
	if err != nil || cfg.Host != "https://platform.example.test:6443" {
		t.Errorf("kubeconfig %s: %v %v", kc, cfg, err)
	}
	if _, err := RESTConfig(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "hosted-runtimes-kubeconfig") {
		t.Errorf("a missing kubeconfig: %v, want an error naming hosted-runtimes-kubeconfig", err)
	}
}

// The runtime's container is started with the control plane's policy for tenants' URLs, all
// three flags given (empty ones too: a hosted runtime takes a flag not given as the control
// plane's default, not as the operator set it), each reading back as the operator's list, even
// a directory with a comma; another policy is another digest, so the runtimes are applied again.
func TestObjectsCarryThePolicy(t *testing.T) {
	cr := runtimes.HostedCredential{RuntimeID: "rt_01hosted", AccountID: "acc_1", Name: "edge", Token: "frt_a_b", UpdatedAt: time.Unix(1700000000, 0)}
	render := func(net netpolicy.Options) ([]string, string) {
		t.Helper()
		c, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, Options{Server: "https://freshet.example.test", Net: net})
		if err != nil {
			t.Fatal(err)
		}
		objs, err := c.Objects(cr)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objs {
			if u.GetKind() != "Deployment" {
				continue
			}
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			var args []string
			for _, a := range cs[0].(map[string]any)["args"].([]any) {
				args = append(args, a.(string))
			}
			return args, c.opts.digest()
		}
		t.Fatal("no Deployment")
		return nil, ""
	}
	// reread parses the policy flags of args as the runtime does.
	reread := func(args []string) (netpolicy.Options, *pflag.FlagSet) {
		t.Helper()
		var got netpolicy.Options
		fs := pflag.NewFlagSet("runtime", pflag.ContinueOnError)
		fs.ParseErrorsAllowlist.UnknownFlags = true
		got.BindFlags(fs, netpolicy.Defaults{FileRepoDirs: []string{"/"}, PrivateNetworks: []string{"all"}, ProviderHosts: []string{"*"}})
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return got, fs
	}

	policy := netpolicy.Options{FileRepoDirs: []string{"/srv/git", "/srv/a,b"}, PrivateNetworks: []string{"10.20.0.0/16", "loopback"}, ProviderHosts: []string{"gitlab.corp:8443"}}
	args, digest := render(policy)
	if !slices.Contains(args, HostedFlag) {
		t.Errorf("args %q lack %s", args, HostedFlag)
	}
	got, _ := reread(args)
	if !slices.Equal(got.FileRepoDirs, policy.FileRepoDirs) || !slices.Equal(got.PrivateNetworks, policy.PrivateNetworks) || !slices.Equal(got.ProviderHosts, policy.ProviderHosts) {
		t.Errorf("the runtime reads the policy %+v from args %q, want %+v", got, args, policy)
	}

	none, noneDigest := render(netpolicy.Options{})
	got, fs := reread(none)
	for _, f := range []string{netpolicy.FlagFileRepos, netpolicy.FlagPrivateNetworks, netpolicy.FlagProviderHosts} {
		if !fs.Changed(f) {
			t.Errorf("the control plane's default policy: --%s is not given in %q", f, none)
		}
	}
	if len(got.FileRepoDirs)+len(got.PrivateNetworks)+len(got.ProviderHosts) != 0 {
		t.Errorf("the control plane's default policy reads back as %+v from %q, want none of each", got, none)
	}
	if digest == noneDigest {
		t.Error("two policies, one digest: a control plane restarted with another policy leaves the runtimes on the old one")
	}
}
