package install_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/agent"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/runner"
	"github.com/freshet-dev/freshet/internal/runtimes/install"
	"github.com/freshet-dev/freshet/internal/runtimes/manifests"
)

// findRunner returns the registered runner called name, or nil.
func findRunner(t *testing.T, c *client.Client, name string) *client.Runner {
	t.Helper()
	l, err := c.ListRunners(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Items {
		if r.Name == name {
			return &r
		}
	}
	return nil
}

// TestRunnerInstall installs a runner on the loopback cluster (whose kwok node runs no
// container): the runner is registered, its objects pass the apiserver's validation and
// admission, its service account holds exactly what the kubernetes executor needs in its
// namespace, and a second install resumes with the same token. With a runner connected
// (in-process, with the token from the Secret) install waits for it; uninstall removes
// everything, and can run again.
func TestRunnerInstall(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	ri, err := install.NewRunner(w.srv.Admin, w.cluster.RESTConfig(), w.out)
	if err != nil {
		t.Fatal(err)
	}
	const name = "k8s-a"
	o := install.RunnerOptions{RunnerOptions: manifests.RunnerOptions{Name: name, Namespace: w.ns, Version: "v0.0.0-test",
		Labels: map[string]string{"pool": "kube"}, ExecutorArgs: []string{"--kube-helper-image=example.com/busybox:1"}}}

	var dry bytes.Buffer
	if err := install.RunnerDryRun(w.srv.Admin, o, &dry); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dry.String(), "kind: Deployment") || strings.Contains(dry.String(), "frn_") || findRunner(t, w.srv.Admin, name) != nil {
		t.Fatalf("dry run output lacks the Deployment, shows a token, or registered the runner:\n%s", dry.String())
	}

	if err := ri.Install(ctx, o); err != nil {
		t.Fatalf("install: %v\n%s", err, w.out)
	}
	reg := findRunner(t, w.srv.Admin, name)
	if reg == nil || reg.Labels["pool"] != "kube" {
		t.Fatalf("runner after install: %+v", reg)
	}
	sec, err := w.kc.CoreV1().Secrets(w.ns).Get(ctx, manifests.RunnerTokenSecretName, metav1.GetOptions{})
	if err != nil || sec.Annotations[manifests.RunnerIDAnnotation] != reg.ID || !strings.HasPrefix(string(sec.Data["token"]), "frn_") {
		t.Fatalf("token Secret: %v %v", sec, err)
	}
	token := string(sec.Data["token"])
	dep, err := w.kc.AppsV1().Deployments(w.ns).Get(ctx, manifests.RunnerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"runner --server " + w.srv.Admin.BaseURL(), "--executor kubernetes --kube-in-cluster", "--kube-namespace " + w.ns,
		"--labels pool=kube", "--kube-helper-image=example.com/busybox:1"} {
		if !strings.Contains(args, want) {
			t.Errorf("runner args %q lack %q", args, want)
		}
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; img != manifests.DefaultImage+":v0.0.0-test" {
		t.Errorf("image %q", img)
	}
	if dep.Spec.Template.Spec.ServiceAccountName != manifests.RunnerName || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("pod spec: service account %q, strategy %q", dep.Spec.Template.Spec.ServiceAccountName, dep.Spec.Strategy.Type)
	}
	// The Deployment's pod is scheduled (to the kwok node) with the token from the Secret.
	waitFor(t, time.Minute, "the runner's pod", func(ctx context.Context) (bool, error) {
		pods, err := w.kc.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: manifests.InstanceLabel + "=" + name})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Spec.NodeName != "", err
	})

	// The runner's service account may do what the executor does in its namespace, and no more.
	sa := w.cluster.RESTConfig()
	sa.Impersonate.UserName = "system:serviceaccount:" + w.ns + ":" + manifests.RunnerName
	sakc, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns, verb, resource, sub string
		allowed                 bool
	}{
		{w.ns, "create", "pods", "", true}, {w.ns, "watch", "pods", "", true}, {w.ns, "get", "pods", "log", true},
		{w.ns, "create", "persistentvolumeclaims", "", true}, {w.ns, "delete", "pods", "", true},
		{w.ns, "get", "secrets", "", false}, {w.ns, "create", "pods", "exec", false}, {"default", "create", "pods", "", false},
	} {
		r, err := sakc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: c.ns, Verb: c.verb, Resource: c.resource, Subresource: c.sub}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.allowed {
			t.Errorf("runner service account: %s %s/%s in %s: allowed %v, want %v", c.verb, c.resource, c.sub, c.ns, r.Status.Allowed, c.allowed)
		}
	}

	// Again: resumes with the same registration and token.
	w.out.Reset()
	if err := ri.Install(ctx, o); err != nil {
		t.Fatalf("second install: %v\n%s", err, w.out)
	}
	sec2, _ := w.kc.CoreV1().Secrets(w.ns).Get(ctx, manifests.RunnerTokenSecretName, metav1.GetOptions{})
	if !strings.Contains(w.out.String(), "resuming") || string(sec2.Data["token"]) != token {
		t.Errorf("second run did not resume with the same token:\n%s", w.out)
	}

	// A runner connected with that token: install --wait returns once it is connected.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ro := agent.RunnerOptions{Options: runner.Options{Server: w.srv.URL, Token: token, Name: name, Executor: "local", Concurrency: 1, Transport: runner.TransportAuto}, WorkDir: t.TempDir()}
	r, err := agent.NewRunner(ro, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	o.Wait = time.Minute
	w.out.Reset()
	if err := ri.Install(ctx, o); err != nil {
		t.Fatalf("install --wait: %v\n%s", err, w.out)
	}
	if !strings.Contains(w.out.String(), "✓ waiting for the runner to connect: connected") {
		t.Errorf("wait output:\n%s", w.out)
	}
	cancel()
	<-done

	// A name registered elsewhere is refused before anything is applied.
	if _, err := w.srv.Admin.RegisterRunner(ctx, client.RegisterRunnerRequest{Name: "taken"}); err != nil {
		t.Fatal(err)
	}
	taken := o
	taken.Name, taken.Wait = "taken", 0
	if err := ri.Install(ctx, taken); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("install of a taken name: %v", err)
	}
	// Bad input names the field and the value.
	bad := o
	bad.ExecutorArgs = []string{"--kube-in-cluster=false"}
	if err := ri.Install(ctx, bad); err == nil || !strings.Contains(err.Error(), "--kube-in-cluster=false") {
		t.Errorf("install with a bad executor arg: %v", err)
	}

	if err := ri.Uninstall(ctx, name, w.ns); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, w.out)
	}
	waitFor(t, time.Minute, "the runner's objects to go", func(ctx context.Context) (bool, error) {
		_, derr := w.kc.AppsV1().Deployments(w.ns).Get(ctx, manifests.RunnerName, metav1.GetOptions{})
		_, rerr := w.kc.RbacV1().Roles(w.ns).Get(ctx, manifests.RunnerName, metav1.GetOptions{})
		_, serr := w.kc.CoreV1().Secrets(w.ns).Get(ctx, manifests.RunnerTokenSecretName, metav1.GetOptions{})
		return apierrors.IsNotFound(derr) && apierrors.IsNotFound(rerr) && apierrors.IsNotFound(serr), nil
	})
	if findRunner(t, w.srv.Admin, name) != nil {
		t.Error("runner still registered after uninstall")
	}
	if err := ri.Uninstall(ctx, name, w.ns); err != nil {
		t.Errorf("second uninstall: %v", err)
	}
}

// waitFor polls cond every 100 ms until it returns true, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
