package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

func TestMain(m *testing.M) { kube.Main(m) }

func kinds(objs []Object) string {
	var k []string
	for _, o := range objs {
		k = append(k, o["kind"].(string))
	}
	return strings.Join(k, ",")
}

func TestObjects(t *testing.T) {
	objs, err := Objects(Options{Name: "edge", Server: "https://freshet.example", Token: "frt_x_y", Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(objs); got != "Namespace,ServiceAccount,ClusterRole,ClusterRoleBinding,Secret,Deployment,Service" {
		t.Fatalf("kinds = %s", got)
	}
	y, _ := YAML(objs)
	for _, want := range []string{"image: freshet/freshet:v1.2.3", "- --access-mode\n", "token: frt_x_y", "namespace: freshet-runtime"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("YAML lacks %q", want)
		}
	}
	// Without a token the Secret is left out; ingress mode adds an Ingress.
	objs, _ = Objects(Options{Name: "edge", Server: "https://f.example", AccessMode: "ingress", IngressHost: "edge.example.com", IngressClass: "nginx"})
	if got := kinds(objs); got != "Namespace,ServiceAccount,ClusterRole,ClusterRoleBinding,Deployment,Service,Ingress" {
		t.Fatalf("ingress kinds = %s", got)
	}
	// --watch-cluster-apps with source namespaces: both flags on the runtime's Deployment
	// (its ClusterRole already reaches every namespace's Applications).
	objs, err = Objects(Options{Name: "edge", Server: "https://f.example", WatchClusterApps: true, ClusterAppsSourceNamespaces: []string{"team-a", "team-b"}})
	if err != nil {
		t.Fatal(err)
	}
	y, _ = YAML(objs)
	if !strings.Contains(string(y), "- --watch-cluster-apps\n        - --cluster-apps-source-namespaces\n        - team-a,team-b\n") {
		t.Errorf("Deployment args lack the source namespaces:\n%s", y)
	}
	objs, _ = Objects(Options{Name: "edge", Server: "https://f.example", WatchClusterApps: true})
	if y, _ = YAML(objs); strings.Contains(string(y), "cluster-apps-source-namespaces") {
		t.Errorf("source namespaces flag without any given:\n%s", y)
	}
	// --events-port: the runtime serves the EventSources' webhooks there, and its Service has
	// the port as events.
	objs, err = Objects(Options{Name: "edge", Server: "https://f.example", EventsPort: 12000})
	if err != nil {
		t.Fatal(err)
	}
	y, _ = YAML(objs)
	for _, want := range []string{"- --events-listen\n        - :12000\n", "- containerPort: 12000\n          name: events\n", "- name: events\n    port: 12000\n    targetPort: events\n"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("events port YAML lacks %q:\n%s", want, y)
		}
	}
	// Persistence: the data claim before the Deployment, which mounts it at DataDir (its
	// --data-dir) and gives its volume the runtime's group.
	objs, err = Objects(Options{Name: "edge", Server: "https://f.example", Persistence: &Persistence{StorageClass: "fast"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(objs); got != "Namespace,ServiceAccount,ClusterRole,ClusterRoleBinding,PersistentVolumeClaim,Deployment,Service" {
		t.Fatalf("persistence kinds = %s", got)
	}
	y, _ = YAML(objs)
	for _, want := range []string{"name: " + DataClaimName + "\n", "storage: 1Gi\n", "storageClassName: fast\n", "accessModes:\n  - ReadWriteOnce\n",
		"- mountPath: " + DataDir + "\n          name: data\n", "claimName: " + DataClaimName + "\n", "fsGroup: 65532\n", "- --data-dir\n        - " + DataDir + "\n"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("persistence YAML lacks %q:\n%s", want, y)
		}
	}
	objs, _ = Objects(Options{Name: "edge", Server: "https://f.example", Persistence: &Persistence{Size: "20Gi"}})
	if y, _ = YAML(objs); !strings.Contains(string(y), "storage: 20Gi\n") || strings.Contains(string(y), "storageClassName") {
		t.Errorf("persistence 20Gi, the default class:\n%s", y)
	}
	objs, _ = Objects(Options{Name: "edge", Server: "https://f.example"})
	if y, _ = YAML(objs); strings.Contains(string(y), "PersistentVolumeClaim") || strings.Contains(string(y), "fsGroup") {
		t.Errorf("a claim without persistence:\n%s", y)
	}
	for _, c := range []struct {
		o     Options
		field string
	}{
		{Options{Name: "e", Server: "https://f", Persistence: &Persistence{Size: "lots"}}, "persistence.size"},
		{Options{Name: "e", Server: "https://f", Persistence: &Persistence{Size: "0"}}, "persistence.size"},
		{Options{Name: "e", Server: "https://f", Persistence: &Persistence{Size: "-1Gi"}}, "persistence.size"},
		{Options{Name: "e", Server: "https://f", Persistence: &Persistence{Size: "1e3"}}, "persistence.size"},
		{Options{Name: "e", Server: "https://f", Persistence: &Persistence{StorageClass: "Fast SSD"}}, "persistence.storageClass"},
		{Options{Name: "Edge", Server: "https://f"}, "name"},
		{Options{Name: "e", Server: "f"}, "server"},
		{Options{Name: "e", Server: "https://f", AccessMode: "vpn"}, "access-mode"},
		{Options{Name: "e", Server: "https://f", AccessMode: "ingress"}, "ingress-host"},
		{Options{Name: "e", Server: "https://f", Namespace: "Bad_NS"}, "namespace"},
		{Options{Name: "e", Server: "https://f", ClusterAppsSourceNamespaces: []string{"a"}}, "cluster-apps-source-namespaces"},
		{Options{Name: "e", Server: "https://f", WatchClusterApps: true, ClusterAppsSourceNamespaces: []string{"a", "B_b"}}, "cluster-apps-source-namespaces[1]"},
		{Options{Name: "e", Server: "https://f", EventsPort: AppProxyPort}, "events-port"},
		{Options{Name: "e", Server: "https://f", EventsPort: 65536}, "events-port"},
	} {
		if _, err := Objects(c.o); errdefs.Field(err) != c.field {
			t.Errorf("%+v: err = %v, want field %s", c.o, err, c.field)
		}
	}
}

// The manifests are accepted by a real API server (schemas, RBAC objects) and the runtime's
// Deployment becomes Available on the loopback cluster's node.
func TestManifestsApplyToARealCluster(t *testing.T) {
	c := kube.Shared(t)
	ns := "freshet-rt-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))[:20]
	objs, err := Objects(Options{Name: "edge", Namespace: ns, Server: "https://freshet.example", Token: "frt_abc_def",
		AccessMode: "ingress", IngressHost: "edge.example.com", EventsPort: 12000})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	gvr := map[string]schema.GroupVersionResource{
		"Namespace": {Version: "v1", Resource: "namespaces"}, "ServiceAccount": {Version: "v1", Resource: "serviceaccounts"},
		"Secret": {Version: "v1", Resource: "secrets"}, "Service": {Version: "v1", Resource: "services"},
		"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		"Deployment":         {Group: "apps", Version: "v1", Resource: "deployments"},
		"Ingress":            {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
	}
	t.Cleanup(func() {
		bg := context.Background()
		dyn.Resource(gvr["Namespace"]).Delete(bg, ns, metav1.DeleteOptions{})
		dyn.Resource(gvr["ClusterRoleBinding"]).Delete(bg, "freshet-runtime-edge", metav1.DeleteOptions{})
		dyn.Resource(gvr["ClusterRole"]).Delete(bg, "freshet-runtime-edge", metav1.DeleteOptions{})
	})
	force := true
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		data, _ := json.Marshal(o)
		var ri dynamic.ResourceInterface = dyn.Resource(gvr[u.GetKind()])
		if u.GetNamespace() != "" {
			ri = dyn.Resource(gvr[u.GetKind()]).Namespace(u.GetNamespace())
		}
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "freshet", Force: &force}); err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for {
		d, err := dyn.Resource(gvr["Deployment"]).Namespace(ns).Get(ctx, "freshet-runtime", metav1.GetOptions{})
		if err == nil {
			if n, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); n == 1 {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("runtime Deployment not Available: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ParsePersistence reads the storage flags of the CLI and the server: a zero size is no claim
// (and then a class is refused), an empty one the default, anything else a positive quantity;
// errors name the caller's flag and the value.
func TestParsePersistence(t *testing.T) {
	for _, c := range []struct {
		size, class string
		want        *Persistence // nil: no claim
		field       string       // the error's, "" when valid
	}{
		{"", "", &Persistence{Size: DefaultStorageSize}, ""},
		{"5Gi", "fast-ssd", &Persistence{Size: "5Gi", StorageClass: "fast-ssd"}, ""},
		{"0", "", nil, ""},
		{"0Gi", "", nil, ""},
		{"0", "fast-ssd", nil, "class-flag"},
		{"-1Gi", "", nil, "size-flag"},
		{"lots", "", nil, "size-flag"},
		{"1e3", "", nil, "size-flag"},
		{"2Gi", "Fast SSD", nil, "class-flag"},
	} {
		got, err := ParsePersistence(c.size, c.class, "size-flag", "class-flag")
		if c.field != "" {
			value := c.size
			if c.field == "class-flag" {
				value = c.class
			}
			if errdefs.Field(err) != c.field || !strings.Contains(err.Error(), fmt.Sprintf("%q", value)) {
				t.Errorf("%q %q: %v, want an invalid %s naming the value", c.size, c.class, err, c.field)
			}
			continue
		}
		if err != nil || (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("%q %q = %+v, %v; want %+v", c.size, c.class, got, err, c.want)
		}
	}
}
