package server_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/runtimes/hostedkube"
	"github.com/freshet-dev/freshet/internal/secrets"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// TestHostedRuntimesOnRealNode runs a hosted runtime for real: `--hosted-runtimes kubernetes`
// places it on the loopback cluster's real node (kubelet, containerd, runc; the placement given
// as --hosted-runtimes-node-selector and --hosted-runtimes-toleration), from the project's own
// image (`ctrenv image`, as `make image` builds it, pushed to the loopback registry). The pod is
// on the node's pod network (the CNI bridge, not the host's network): the control plane listens
// on the node's address, the pods' gateway, where the runtime dials it. The runtime connects
// (heartbeats, and its app-proxy answers through the tunnel), its installation repository on its
// data claim (bound here to a hostPath volume, as a storage provisioner would); the control
// plane is stopped and a new one started on the same database, and the same pod reconnects by
// itself; a token rotation replaces the pod, and the new one, on the same claim, finds the
// repository the first one made; deleting the account deletes the runtime's namespace, the pod
// with it.
func TestHostedRuntimesOnRealNode(t *testing.T) {
	t0 := time.Now()
	c, reg := containers.RealNode(t)
	image := reg.FreshetImage(t)
	t.Logf("real node and image %s ready in %s", image, time.Since(t0).Round(time.Second))
	ctx := context.Background()

	// The control plane listens on the real node's address: the host's end of the pods' bridge.
	nodeIP := realNodeIP(t, c)
	// One port for both control planes: the runtime's --server does not change.
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()

	sel, _ := kube.RealNodePlacement()
	prefix := fmt.Sprintf("fr%d-", time.Now().UnixNano()%1_000_000)
	dsn := storetest.DSN(t, store.SQLite)
	dataDir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "master.key")
	if _, err := secrets.GenerateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	cfg := servertest.Config{Edit: func(o *server.Options) {
		o.Listen, o.DB, o.DataDir, o.MasterKeyFile = listen, dsn, dataDir, keyFile
		o.Hosted = server.HostedOptions{Mode: server.HostedKubernetes, Kubeconfig: c.Kubeconfig, NamespacePrefix: prefix, Image: image,
			Server: "http://" + listen, NodeSelector: sel, Tolerations: []string{kube.RealNodeTaint + "=true:NoSchedule"}}
	}}
	s1 := servertest.StartWith(t, store.SQLite, cfg)
	if _, err := s1.Admin.CreateAccount(ctx, "tenant"); err != nil {
		t.Fatal(err)
	}
	tenant := s1.Login(t, s1.AdminEmail, servertest.AdminPassword)
	if _, err := tenant.SwitchAccount(ctx, "tenant"); err != nil {
		t.Fatal(err)
	}
	h, err := tenant.CreateHostedRuntime(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ns := prefix + strings.ReplaceAll(strings.ToLower(h.ID), "_", "-")
	t.Cleanup(func() {
		_ = c.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// The loopback cluster has no storage provisioner: the data claim is bound to a hostPath
	// volume, a directory of this host (the real node's), writable by the runtime's user (a
	// hostPath volume gets no fsGroup).
	volumes := t.TempDir()
	if err := os.Mkdir(filepath.Join(volumes, hostedkube.ClaimName), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(volumes, hostedkube.ClaimName), 0o777); err != nil {
		t.Fatal(err)
	}
	c.ProvisionVolumes(t, ns, volumes)
	repoHEAD := filepath.Join(volumes, hostedkube.ClaimName, "installation.git", "HEAD")
	dump := func() {
		pods, _ := c.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		for _, p := range pods.Items {
			logs, _ := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(context.Background())
			t.Logf("pod %s on %q: %s %+v %+v\n%s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses, logs)
		}
	}

	// The pod runs on the real node, ready, and the runtime connects.
	created := time.Now()
	var pod corev1.Pod
	waitOr := func(timeout time.Duration, check func() string) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			msg := check()
			if msg == "" {
				return
			}
			if time.Now().After(deadline) {
				dump()
				t.Fatal(msg)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	waitOr(4*time.Minute, func() string {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 {
			return fmt.Sprintf("the hosted runtime's pods: %d (%v), want one", len(pods.Items), err)
		}
		pod = pods.Items[0]
		if pod.Spec.NodeName != kube.RealNodeName || pod.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("the hosted runtime's pod is on %q, %s: want running on %s", pod.Spec.NodeName, pod.Status.Phase, kube.RealNodeName)
		}
		return ""
	})
	if pod.Spec.HostNetwork || pod.Status.PodIP == "" || pod.Status.PodIP == nodeIP {
		t.Fatalf("the pod's address %q (host network %v): want one on the pod network", pod.Status.PodIP, pod.Spec.HostNetwork)
	}
	waitOr(2*time.Minute, func() string { return connected(ctx, tenant, h.Name, created) })
	t.Logf("hosted runtime connected %s after it was created", time.Since(created).Round(time.Second))
	// Ready too (its Deployment available): in tunnel mode nothing listens for a probe.
	waitOr(time.Minute, func() string {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || !podReady(*p) {
			return fmt.Sprintf("the connected runtime's pod is not ready (%v)", err)
		}
		pod = *p
		return ""
	})
	checkNetworkPolicy(t, c, ns)
	// Its local installation repository is on the claim.
	made, err := os.Stat(repoHEAD)
	if err != nil {
		t.Fatalf("the runtime's installation repository is not on its data claim: %v", err)
	}

	// The control plane restarts; the same pod reconnects to the new one by itself.
	s1.Stop()
	stopped := time.Now()
	s2 := servertest.StartWith(t, store.SQLite, cfg)
	tenant = s2.Login(t, s2.AdminEmail, servertest.AdminPassword)
	if _, err := tenant.SwitchAccount(ctx, "tenant"); err != nil {
		t.Fatal(err)
	}
	waitOr(2*time.Minute, func() string { return connected(ctx, tenant, h.Name, stopped) })
	t.Logf("hosted runtime reconnected %s after the control plane stopped", time.Since(stopped).Round(time.Second))
	now, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || now.UID != pod.UID || restarts(*now) != restarts(pod) {
		t.Fatalf("the runtime's pod after the restart: %v %v, want the same pod, its container not restarted (%s)", now, err, restarts(pod))
	}

	// A token rotation replaces the pod (Recreate: the old one lets go of the claim first); the
	// new one connects, on the repository the first one made.
	rotated := time.Now()
	if _, err := tenant.RotateRuntimeToken(ctx, h.Name); err != nil {
		t.Fatal(err)
	}
	waitOr(4*time.Minute, func() string {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].UID == pod.UID || pods.Items[0].Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("the hosted runtime's pods after the rotation: %d (%v), want one new pod running", len(pods.Items), err)
		}
		return ""
	})
	waitOr(2*time.Minute, func() string { return connected(ctx, tenant, h.Name, rotated) })
	t.Logf("hosted runtime connected from its new pod %s after the rotation", time.Since(rotated).Round(time.Second))
	if kept, err := os.Stat(repoHEAD); err != nil || !kept.ModTime().Equal(made.ModTime()) {
		t.Errorf("the installation repository after the pod's replacement: %v, %v; want the first pod's (made %s)", kept, err, made.ModTime())
	}

	// Deleting the account deletes the runtime's namespace, its pod with it.
	if err := tenant.DeleteAccount(ctx, "tenant"); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitOr(3*time.Minute, func() string {
		n, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		phase := corev1.NamespacePhase("")
		if n != nil {
			phase = n.Status.Phase
		}
		return fmt.Sprintf("the deleted account's hosted runtime's namespace %s is still there: %s %v", ns, phase, err)
	})
	t.Logf("namespace gone %s after the account was deleted; the whole test took %s", time.Since(deleted).Round(time.Second), time.Since(t0).Round(time.Second))
}

// connected says why runtime name is not connected through c since since: "" once it is
// healthy (every component: its gitops engine reads its local installation repository, in an
// image without a git binary) with a heartbeat after since, its tunnel is up and its app-proxy
// answers through it.
func connected(ctx context.Context, c *client.Client, name string, since time.Time) string {
	r, err := c.GetRuntime(ctx, name)
	if err != nil {
		return err.Error()
	}
	if r.Status != "healthy" || r.LastHeartbeat == nil || !r.LastHeartbeat.After(since) {
		return fmt.Sprintf("runtime %s: status %s, last heartbeat %v, components %+v: want healthy with a heartbeat after %s", name, r.Status, r.LastHeartbeat, r.Components, since.Format(time.RFC3339))
	}
	tunnel := false
	for _, comp := range r.Components {
		tunnel = tunnel || comp.Name == "tunnel" && comp.Health == "healthy"
	}
	if !tunnel {
		return fmt.Sprintf("runtime %s: components %+v, want its tunnel healthy", name, r.Components)
	}
	if _, err := c.ListApplications(ctx, name); err != nil {
		return "the runtime's app-proxy through the tunnel: " + err.Error()
	}
	return ""
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(p corev1.Pod) string {
	var n []string
	for _, s := range p.Status.ContainerStatuses {
		n = append(n, s.Name+":"+strconv.Itoa(int(s.RestartCount)))
	}
	return strings.Join(n, ",")
}
