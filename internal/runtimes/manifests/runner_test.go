package manifests

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// executorRole is the kubernetes executor's Role (kubernetes.RoleYAML), which the installer
// hands in.
func executorRole(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../runner/executor/kubernetes/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunnerObjects(t *testing.T) {
	role := executorRole(t)
	objs, err := RunnerObjects(RunnerOptions{Name: "kube", RoleYAML: role, Server: "https://freshet.example", Token: "frn_x", RunnerID: "r1", Version: "v1.2.3",
		Concurrency: 3, Labels: map[string]string{"b": "2", "a": "1"}, ExecutorArgs: []string{"--kube-node-selector=disk=ssd"},
		HostNetwork: true, Tolerations: []Toleration{{Key: "k", Value: "v", Effect: "NoSchedule"}, {Key: "any"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(objs); got != "Namespace,ServiceAccount,Role,RoleBinding,Secret,Deployment" {
		t.Fatalf("kinds = %s", got)
	}
	y, _ := YAML(objs)
	for _, want := range []string{"image: freshet/freshet:v1.2.3", "namespace: freshet-runner", "token: frn_x", "freshet.dev/runner-id: r1",
		"- --kube-in-cluster\n", "- a=1,b=2\n", "- --kube-node-selector=disk=ssd\n", "hostNetwork: true", "- --concurrency\n", "- \"3\"\n",
		"resources:\n  - pods/log", "operator: Exists", "name: FRESHET_RUNNER_TOKEN", "runAsNonRoot: true"} {
		if !strings.Contains(string(y), want) {
			t.Errorf("runner manifests lack %q:\n%s", want, y)
		}
	}
	// The Role is the executor's, in the runner's namespace.
	if md := objs[2]["metadata"].(map[string]any); md["name"] != RunnerName || md["namespace"] != DefaultRunnerNamespace {
		t.Errorf("role metadata %v", md)
	}
	// Without a token, no Secret (the installer creates it).
	objs, _ = RunnerObjects(RunnerOptions{Name: "kube", Server: "http://x", RoleYAML: role})
	if got := kinds(objs); strings.Contains(got, "Secret") {
		t.Errorf("kinds without a token = %s", got)
	}
}

func TestRunnerOptionsRefused(t *testing.T) {
	role := executorRole(t)
	for _, c := range []struct {
		o     RunnerOptions
		field string
	}{
		{RunnerOptions{Name: "Kube", Server: "http://x"}, "name"},
		{RunnerOptions{Name: "kube", Server: "x"}, "server"},
		{RunnerOptions{Name: "kube", Server: "http://x", Namespace: "a_b"}, "namespace"},
		{RunnerOptions{Name: "kube", Server: "http://x", Concurrency: 1000}, "concurrency"},
		{RunnerOptions{Name: "kube", Server: "http://x", ExecutorArgs: []string{"--server=y"}}, "executor-arg"},
		{RunnerOptions{Name: "kube", Server: "http://x", ExecutorArgs: []string{"--kube-kubeconfig=/x"}}, "executor-arg"},
		{RunnerOptions{Name: "kube", Server: "http://x", Tolerations: []Toleration{{Key: "k", Effect: "Never"}}}, "toleration[0].effect"},
		{RunnerOptions{Name: "kube", Server: "http://x", RoleYAML: "kind: ClusterRole\nmetadata: {name: freshet-runner}"}, "roleYAML"},
	} {
		if c.field != "roleYAML" {
			c.o.RoleYAML = role
		}
		_, err := RunnerObjects(c.o)
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want invalid %s", c.o, err, c.field)
		}
	}
}
