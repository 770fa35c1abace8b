package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// `freshet up`'s runtime reads the Helm releases of its cluster: a release installed and
// upgraded with the Helm SDK in the loopback cluster is listed by `freshet helm-release list`
// and shown with its two revisions by `get`; uninstalled, it leaves the list.
func TestHelmReleaseCommands(t *testing.T) {
	kc := kube.Shared(t)
	ns := kc.Namespace(t)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kc.Kubeconfig, &ns
	ac := new(action.Configuration)
	if err := ac.Init(flags, ns, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	ch := func(v string) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "tiny", Version: v, AppVersion: "app-" + v},
			Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Release.Name }}'\n")}}}
	}
	in := action.NewInstall(ac)
	in.ReleaseName, in.Namespace = "tiny", ns
	if _, err := in.RunWithContext(t.Context(), ch("0.1.0"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := action.NewUpgrade(ac).RunWithContext(t.Context(), "tiny", ch("0.2.0"), nil); err != nil {
		t.Fatal(err)
	}

	home := t.TempDir()
	env := []string{"FRESHET_CLI_CONFIG=" + filepath.Join(home, "cli.yaml"), "FRESHET_SERVER=", "FRESHET_TOKEN=", "FRESHET_RUNTIME="}
	up := startUp(t, filepath.Join(home, "data"), proc.FreePort(t), "FRESHET_ADMIN_PASSWORD=helm-password-1", "KUBECONFIG="+kc.Kubeconfig)
	mustCLI(t, env, "login", "--server", up.url, "-u", "admin@freshet.local", "-p", "helm-password-1")
	list := func() []client.HelmRelease {
		t.Helper()
		var l []client.HelmRelease
		if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "helm-release", "list", "--namespace", ns, "-o", "json")), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	// The runtime reads its cluster when it starts, then every 30 s.
	var l []client.HelmRelease
	for deadline := time.Now().Add(90 * time.Second); len(l) == 0; time.Sleep(500 * time.Millisecond) {
		if l = list(); len(l) == 0 && time.Now().After(deadline) {
			t.Fatalf("release tiny not listed after 90s\n%s", up.stderr)
		}
	}
	if len(l) != 1 || l[0].Name != "tiny" || l[0].Cluster != "in-cluster" || l[0].Revision != 2 || l[0].ChartVersion != "0.2.0" || l[0].Status != "deployed" {
		t.Fatalf("listed: %+v", l)
	}
	var got client.HelmRelease
	if err := json.Unmarshal([]byte(mustRun(t, env, time.Minute, "helm-release", "get", "tiny", "--namespace", ns, "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.History) != 2 || !slices.ContainsFunc(got.History, func(r client.HelmRevision) bool { return r.Revision == 1 && r.Status == "superseded" }) {
		t.Fatalf("get: %+v", got)
	}

	if _, err := action.NewUninstall(ac).Run("tiny"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(90 * time.Second); len(l) != 0; time.Sleep(500 * time.Millisecond) {
		if l = list(); len(l) != 0 && time.Now().After(deadline) {
			t.Fatalf("release tiny still listed 90s after its uninstall: %+v", l)
		}
	}
}
