package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/testenv/proc"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/testenv/gitserver"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// run runs a freshet CLI command and returns its output and exit code (cli hides the code,
// and bounds commands to 30 s: waits and syncs take longer).
func run(t *testing.T, env []string, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		code = ee.ExitCode()
	default:
		t.Fatalf("freshet %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String(), code
}

// mustRun runs a command that must succeed.
func mustRun(t *testing.T, env []string, timeout time.Duration, args ...string) string {
	t.Helper()
	out, errs, code := run(t, env, timeout, args...)
	if code != 0 {
		t.Fatalf("freshet %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

func guestbookConfig(value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: guestbook-config\ndata:\n  greeting: %q\n", value)
}

func guestbookDeployment(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook
spec:
  replicas: %d
  selector:
    matchLabels: {app: guestbook}
  template:
    metadata:
      labels: {app: guestbook}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`, replicas)
}

// A user deploys an app from git to Kubernetes with `freshet up` and the `freshet app`
// commands: create it, wait for it, inspect it, change git and sync, roll back, delete it.
func TestGitOpsApp(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	repo := gitserver.New(t).NewRepo("apps")
	c1 := repo.Commit("main", map[string]string{
		"guestbook/config.yaml": guestbookConfig("hello"),
		"guestbook/deploy.yaml": guestbookDeployment(1),
	}, "Add the guestbook")

	home := t.TempDir()
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "cli.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN=", "FRESHET_RUNTIME="}
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=gitops-password-1", "KUBECONFIG="+kc.Kubeconfig)
	mustCLI(t, env, "login", "--server", in.url, "-u", "admin@freshet.local", "-p", "gitops-password-1")

	// The local runtime dials the control plane after it is ready: wait until it answers.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errs, code := run(t, env, 30*time.Second, "app", "list")
		if code == 0 {
			if strings.TrimSpace(out) != "NAME  PROJECT  SYNC  HEALTH  REVISION  REPO  PATH  DESTINATION" {
				t.Fatalf("app list of a new runtime:\n%s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the local runtime does not serve applications after 30s: %s\n%s", errs, in.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}

	create := []string{"app", "create", "guestbook", "--repo", repo.URL(), "--path", "guestbook",
		"--dest-server", "https://kubernetes.default.svc", "--dest-namespace", ns, "--sync-policy", "automated", "--auto-prune"}
	if out := mustRun(t, env, time.Minute, create...); out != "Created application guestbook in runtime local.\n" {
		t.Fatalf("app create: %q", out)
	}
	if _, errs, code := run(t, env, time.Minute, create...); code != 1 || !strings.Contains(errs, "exists") {
		t.Fatalf("creating it again: exit %d: %s", code, errs)
	}

	// Automated sync deploys it.
	out := mustRun(t, env, 4*time.Minute, "app", "wait", "guestbook", "--sync", "--health", "--timeout", "3m")
	if !regexp.MustCompile(`(?m)^guestbook\s+default\s+Synced\s+Healthy\s+` + c1[:7] + `\s`).MatchString(out) {
		t.Fatalf("app wait:\n%s", out)
	}
	var apps []client.Application
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "app", "list", "-o", "json")), &apps); err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].Name != "guestbook" || apps[0].Status.Revision != c1 || apps[0].Status.Sync != client.SyncStatusSynced ||
		apps[0].AppSpec().EffectiveSource().RepoURL != repo.URL() || apps[0].AppSpec().Destination.Namespace != ns {
		t.Fatalf("app list -o json: %+v", apps)
	}
	if out := mustRun(t, env, time.Minute, "app", "list"); !strings.Contains(out, "https://kubernetes.default.svc ("+ns+")") {
		t.Fatalf("app list:\n%s", out)
	}

	// get: the summary and the tree Deployment → ReplicaSet → Pod, all healthy.
	out = mustRun(t, env, time.Minute, "app", "get", "guestbook")
	for _, re := range []string{
		`(?m)^Sync status:\s+Synced to HEAD \(` + c1[:7] + `\)$`,
		`(?m)^Health:\s+Healthy$`,
		`(?m)^Sync policy:\s+automated \(prune\)$`,
		`(?m)^-\s+ConfigMap\s+` + ns + `\s+guestbook-config\s+Synced\s`,
		`(?m)^ConfigMap/guestbook-config\s+` + ns + `\s+Synced\s`,
		`(?m)^Deployment/guestbook\s+` + ns + `\s+Synced\s+Healthy`,
		`(?m)^└─ ReplicaSet/guestbook-\S+\s+` + ns + `\s+-\s+Healthy`,
		`(?m)^   └─ Pod/guestbook-\S+\s+` + ns + `\s+-\s+Healthy`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("app get lacks %s:\n%s", re, out)
		}
	}

	// Nothing differs from git: exit code 0, no output.
	if out, errs, code := run(t, env, time.Minute, "app", "diff", "guestbook"); code != 0 || out != "" {
		t.Fatalf("app diff of a synced app: exit %d\n%s%s", code, out, errs)
	}

	// A change in git, synced by hand.
	c2 := repo.Commit("main", map[string]string{
		"guestbook/config.yaml": guestbookConfig("hello again"),
		"guestbook/deploy.yaml": guestbookDeployment(2),
	}, "Scale the guestbook to 2")
	out = mustRun(t, env, 4*time.Minute, "app", "sync", "guestbook")
	for _, re := range []string{
		`(?m)^Revision:\s+` + c2 + `$`,
		`(?m)^Phase:\s+Succeeded$`,
		`(?m)^Initiated by:\s+user$`,
		`(?m)^ConfigMap\s+guestbook-config\s+configured\s`,
		`(?m)^Deployment\s+guestbook\s+configured\s`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("app sync lacks %s:\n%s", re, out)
		}
	}
	if got := greeting(t, kc, ns); got != "hello again" {
		t.Fatalf("after the sync the ConfigMap says %q", got)
	}

	var hist []client.HistoryEntry
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "app", "history", "guestbook", "-o", "json")), &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[0].ID != 1 || hist[0].Revision != c1 || hist[0].InitiatedBy != "automated" ||
		hist[1].Revision != c2 || hist[1].InitiatedBy != "user" || hist[1].Phase != client.PhaseSucceeded {
		t.Fatalf("app history -o json: %+v", hist)
	}
	out = mustRun(t, env, time.Minute, "app", "history", "guestbook")
	for _, re := range []string{
		`(?m)^1\s+\S+ \S+\s+` + c1[:7] + `\s+Succeeded\s+automated\s+Freshet Test\s+Add the guestbook$`,
		`(?m)^2\s+\S+ \S+\s+` + c2[:7] + `\s+Succeeded\s+user \(admin@freshet\.local\)\s+Freshet Test\s+Scale the guestbook to 2$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("app history lacks %s:\n%s", re, out)
		}
	}

	// Roll back to the first sync: automated sync is switched off, so it stays there, and the
	// app differs from git (exit code 1 from diff).
	out = mustRun(t, env, 4*time.Minute, "app", "rollback", "guestbook", "1")
	if !strings.Contains(out, "Rolled application guestbook back to history entry 1 (revision "+c1[:7]+").") ||
		!strings.Contains(out, "Automated sync of guestbook is now off") || !regexp.MustCompile(`(?m)^Phase:\s+Succeeded$`).MatchString(out) {
		t.Fatalf("app rollback:\n%s", out)
	}
	if got := greeting(t, kc, ns); got != "hello" {
		t.Fatalf("after the rollback the ConfigMap says %q", got)
	}
	if out := mustRun(t, env, time.Minute, "app", "get", "guestbook"); !strings.Contains(out, "automated (prune), switched off by a rollback") {
		t.Errorf("app get after the rollback:\n%s", out)
	}
	out, errs, code := run(t, env, time.Minute, "app", "diff", "guestbook")
	if code != 1 || !strings.Contains(errs, "resources differ from git") ||
		!strings.Contains(out, "===== apps/Deployment "+ns+"/guestbook (OutOfSync) ======") || !regexp.MustCompile(`(?m)^\+\s*replicas: 2$`).MatchString(out) {
		t.Fatalf("app diff after the rollback: exit %d\n%s%s", code, out, errs)
	}

	// Delete it: its objects go too.
	if out := mustRun(t, env, 2*time.Minute, "app", "delete", "guestbook"); out != "Deleted application guestbook and its resources.\n" {
		t.Fatalf("app delete: %q", out)
	}
	ctx := context.Background()
	deadline = time.Now().Add(time.Minute)
	for {
		_, errCM := kc.Client.CoreV1().ConfigMaps(ns).Get(ctx, "guestbook-config", metav1.GetOptions{})
		_, errDeploy := kc.Client.AppsV1().Deployments(ns).Get(ctx, "guestbook", metav1.GetOptions{})
		if apierrors.IsNotFound(errCM) && apierrors.IsNotFound(errDeploy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after app delete: ConfigMap %v, Deployment %v", errCM, errDeploy)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, errs, code := run(t, env, time.Minute, "app", "get", "guestbook"); code != 1 || !strings.Contains(errs, "not found") {
		t.Fatalf("app get after delete: exit %d %s", code, errs)
	}
	in.stop(t)
}

func greeting(t *testing.T, kc *kube.Cluster, ns string) string {
	t.Helper()
	cm, err := kc.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), "guestbook-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["greeting"]
}

// TestPushWebhookToSynced measures the product's whole push path: a signed GitHub push
// webhook to the control plane → the account's runtime through its tunnel → the engine
// fetches, renders and applies → the app is Synced and Healthy at the pushed commit, as the
// runtime's API reports it. It prints a BENCH line (make bench-gitops) and fails only far
// beyond the 1 s target.
func TestPushWebhookToSynced(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	repo := gitserver.New(t).NewRepo("hook")
	repo.Commit("main", map[string]string{"app/config.yaml": guestbookConfig("v0")}, "v0")
	home := t.TempDir()
	in := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=webhook-password-1", "KUBECONFIG="+kc.Kubeconfig)
	ctx := context.Background()
	login, err := client.New(in.url).Login(ctx, client.LoginRequest{Email: "admin@freshet.local", Password: "webhook-password-1"})
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(in.url, client.WithToken(login.Token))

	// The account's GitOps webhook secret (generated, shown once).
	req, _ := http.NewRequest("POST", in.url+"/api/v1/gitops/webhook", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+login.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var hook struct {
		Secret string            `json:"secret"`
		URLs   map[string]string `json:"urls"`
	}
	json.NewDecoder(resp.Body).Decode(&hook)
	resp.Body.Close()
	if hook.Secret == "" || hook.URLs["github"] == "" {
		t.Fatalf("GitOps webhook: %d %+v", resp.StatusCode, hook)
	}

	manifest := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: hooked}
spec:
  project: default
  source: {repoURL: %s, path: app, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: {automated: {prune: true}}
`, repo.URL(), ns)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := c.CreateApplication(ctx, "local", []byte(manifest), false)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: %v\n%s", err, in.stderr)
		}
		time.Sleep(200 * time.Millisecond) // the local runtime connects right after start
	}
	waitFor := func(sha string, bound time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			a, err := c.GetApplication(ctx, "local", "hooked")
			if err == nil && a.Status.Revision == sha && a.Status.Sync == client.SyncStatusSynced && a.Status.Health.Status == "Healthy" {
				return time.Since(start)
			}
			if time.Since(start) > bound {
				t.Fatalf("not Synced+Healthy at %s after %s: %+v %v", sha[:7], bound, a.Status, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(repo.RevParse("main"), time.Minute)

	var took []time.Duration
	for i := 1; i <= 5; i++ {
		sha := repo.Commit("main", map[string]string{"app/config.yaml": guestbookConfig(fmt.Sprint("v", i))}, fmt.Sprint("v", i))
		push := fmt.Appendf(nil, `{"ref":"refs/heads/main","before":"%s","after":"%s","repository":{"full_name":"acme/hook","clone_url":%q},"sender":{"login":"ann"}}`,
			strings.Repeat("0", 40), sha, repo.URL())
		m := hmac.New(sha256.New, []byte(hook.Secret))
		m.Write(push)
		req, _ := http.NewRequest("POST", hook.URLs["github"], bytes.NewReader(push))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprint("d-", i))
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("webhook delivery: %s", resp.Status)
		}
		waitFor(sha, 30*time.Second)
		took = append(took, time.Since(start)) // from the delivery
	}
	slices.Sort(took)
	fmt.Printf("BENCH %-44s median %s, worst %s (of %d)\n", "push webhook → control plane → runtime → Synced", took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(took))
	if took[len(took)/2] > 5*time.Second {
		t.Errorf("webhook to Synced: median %s", took[len(took)/2])
	}
}
