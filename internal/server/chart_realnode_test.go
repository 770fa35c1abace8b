package server_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/helmchart"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestPlatformChartOnRealNode installs the platform chart (charts/freshet, rendered as `helm
// template` renders it, applied server-side) on the loopback cluster, its two control-plane
// replicas on the real node (kubelet, containerd, runc) from the project's own image (`ctrenv
// image`, as `make image` builds it), against PostgreSQL (a fresh schema of the test database,
// reached from the pods through a TCP relay on the node's address, the pods' gateway) and a NATS
// JetStream server listening there. Both replicas must pass the chart's readiness and liveness
// probes as the kubelet runs them, and the Service must answer: /readyz and the admin the chart
// configures logging in, through the API server's service proxy. One replica's pod is then
// deleted: the Deployment replaces it and is Available again with both.
func TestPlatformChartOnRealNode(t *testing.T) {
	if os.Getenv(storetest.EnvPostgres) == "" {
		t.Skipf("%s is not set: the chart's control plane runs on PostgreSQL", storetest.EnvPostgres)
	}
	c, reg := containers.RealNode(t)
	image := reg.FreshetImage(t)
	ctx := context.Background()
	nodeIP := realNodeIP(t, c)

	// PostgreSQL, through a relay on the node's address.
	dsn := storetest.DSN(t, store.Postgres)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = relay(t, nodeIP, u.Host)
	dsn = u.String()
	// NATS JetStream, listening on the node's address.
	ns0, err := natsserver.NewServer(&natsserver.Options{Host: nodeIP, Port: natsserver.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns0.Start()
	t.Cleanup(ns0.Shutdown)
	if !ns0.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}

	ns := c.Namespace(t)
	key := make([]byte, 32)
	rand.Read(key)
	sel, tol := kube.RealNodePlacement()
	tols := []any{}
	for _, x := range tol {
		tols = append(tols, map[string]any{"key": x.Key, "operator": string(x.Operator), "value": x.Value, "effect": string(x.Effect)})
	}
	const password = "chart-real-node-password-1"
	ch, err := helmchart.Load(charts.Freshet)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Render(ch, helmchart.Release{Name: "freshet", Namespace: ns}, map[string]any{
		"replicaCount": 2,
		"image":        map[string]any{"repository": image, "pullPolicy": "IfNotPresent"},
		"masterKey":    map[string]any{"value": "k1:" + base64.StdEncoding.EncodeToString(key)},
		"database":     map[string]any{"url": dsn},
		"nats":         map[string]any{"url": ns0.ClientURL()},
		"tunnel":       map[string]any{"hopSecret": "chart-real-node-hop-secret-of-32-bytes-or-more"},
		"admin":        map[string]any{"email": "ops@example.com", "password": password},
		"ingress":      map[string]any{"enabled": false},
		"nodeSelector": map[string]any{kube.RealNodeLabel: sel[kube.RealNodeLabel]},
		"tolerations":  tols,
	})
	if err != nil {
		t.Fatal(err)
	}

	// Applied as helm would, server-side, each object in the release's namespace.
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	deployment := ""
	for _, o := range objs {
		obj := &unstructured.Unstructured{Object: o}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		ri := c.Dynamic.Resource(m.Resource).Namespace(ns)
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			t.Fatalf("the chart renders %s %s, not namespaced: the test does not clean that up", gvk.Kind, obj.GetName())
		}
		body, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		force := true
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "freshet-chart-test", Force: &force}); err != nil {
			t.Fatalf("apply %s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		if gvk.Kind == "Deployment" {
			deployment = obj.GetName()
		}
	}
	if deployment == "" {
		t.Fatal("no Deployment rendered")
	}

	dump := func() {
		pods, _ := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			logs, _ := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr(int64(40))}).DoRaw(context.Background())
			t.Logf("pod %s on %q: %s %+v %+v\n%s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses, logs)
		}
	}
	available := func(what string, uids map[types.UID]bool) []corev1.Pod {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for {
			d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, deployment, metav1.GetOptions{})
			if err == nil && d.Status.ReadyReplicas == 2 && d.Status.UpdatedReplicas == 2 && d.Status.Replicas == 2 && deploymentAvailable(d) {
				pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var ready []corev1.Pod
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && !uids[p.UID] {
						ready = append(ready, p)
					}
				}
				if len(ready) == 2 {
					return ready
				}
			}
			if time.Now().After(deadline) {
				dump()
				t.Fatalf("%s: the Deployment is not Available with 2 ready replicas after 5 min: %v", what, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	pods := available("install", nil)
	for _, p := range pods {
		if p.Spec.NodeName != kube.RealNodeName {
			t.Fatalf("pod %s runs on %q, not the real node", p.Name, p.Spec.NodeName)
		}
	}

	// The Service answers, through the API server's proxy.
	svc := "/api/v1/namespaces/" + ns + "/services/freshet:http/proxy"
	rest := c.Client.CoreV1().RESTClient()
	if b, err := rest.Get().AbsPath(svc + "/readyz").DoRaw(ctx); err != nil {
		dump()
		t.Fatalf("GET /readyz through the Service: %v %s", err, b)
	}
	login := func() {
		t.Helper()
		body := fmt.Sprintf(`{"email":"ops@example.com","password":%q}`, password)
		b, err := rest.Post().AbsPath(svc+"/api/v1/auth/login").SetHeader("Content-Type", "application/json").Body([]byte(body)).DoRaw(ctx)
		if err != nil || !strings.Contains(string(b), `"token"`) {
			dump()
			t.Fatalf("the chart's admin logs in through the Service: %v %s", err, b)
		}
	}
	login()

	// A replica's pod deleted: the Deployment replaces it; both replicas serve again.
	gone := pods[0]
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	available("after a pod's deletion", map[types.UID]bool{gone.UID: true})
	login()
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

// realNodeIP is the real node's InternalIP: the host's end of the pods' bridge, where pods
// reach what the test serves.
func realNodeIP(t *testing.T, c *kube.Cluster) string {
	t.Helper()
	node, err := c.Client.CoreV1().Nodes().Get(context.Background(), kube.RealNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("the real node has no InternalIP: %+v", node.Status.Addresses)
	return ""
}

// relay forwards TCP connections from a port on host to target until the test ends; it
// returns the address it listens on.
func relay(t *testing.T, host, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	return ln.Addr().String()
}
