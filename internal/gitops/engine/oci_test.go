package engine_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/helmrepo"
	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/testenv/chartrepo"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

// repoSecrets creates Argo CD repository Secrets (and argocd-tls-certs-cm) in the test's
// namespace of the loopback cluster and reads them back as the runtime does.
func (v *env) repoSecrets(cas map[string]string, secrets map[string]map[string]string) *repocreds.Set {
	v.t.Helper()
	kc, err := kubernetes.NewForConfig(v.c.RESTConfig())
	if err != nil {
		v.t.Fatal(err)
	}
	ctx := v.ctx(30 * time.Second)
	for name, data := range secrets {
		typ := repocreds.TypeRepository
		if data["_template"] == "true" {
			typ = repocreds.TypeRepoCreds
			delete(data, "_template")
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{repocreds.SecretTypeLabel: typ}}, StringData: data}
		if _, err := kc.CoreV1().Secrets(v.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			v.t.Fatal(err)
		}
	}
	if cas != nil {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: repocreds.TLSCertsConfigMap}, Data: cas}
		if _, err := kc.CoreV1().ConfigMaps(v.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			v.t.Fatal(err)
		}
	}
	set, problems, err := repocreds.Secrets{Client: kc, Namespace: v.ns}.Load(ctx)
	if err != nil || len(problems) > 0 {
		v.t.Fatalf("reading the repository secrets: %v %v", err, problems)
	}
	return set
}

// withRepoCreds gives the engine a chart cache and the credentials of set, as the runtime's
// host does.
func withRepoCreds(t *testing.T, set **repocreds.Set, charts **helmrepo.Cache) envOption {
	c, err := helmrepo.New(helmrepo.Options{Dir: t.TempDir(), Policy: netpolicy.Unrestricted()})
	if err != nil {
		t.Fatal(err)
	}
	*charts = c
	return func(o *engine.Options) {
		o.Charts = c
		o.Credentials = func(u string) git.Credentials { cr, _ := (*set).Lookup(u); return cr }
		o.RepoByName = func(n string) (string, bool) {
			e, ok := (*set).ByName(n)
			if !ok {
				return "", false
			}
			return e.URL, true
		}
	}
}

// Charts from an OCI registry (the loopback registry: TLS from its own CA, basic auth), in
// both of Argo CD's repoURL forms, with credentials from Argo CD repository Secrets in the
// namespace: they sync; a remote dependency on the registry, named by a repository's name,
// renders; a missing version and refused credentials are conditions with nothing applied.
func TestOCIChartsWithRepositorySecrets(t *testing.T) {
	reg := containers.Registry(t)
	url := chartrepo.PushOCI(t, reg, "charts/engine", "demo", "1.0.0", "1.1.0", "1.1.3")
	chartrepo.PushOCI(t, reg, "private/engine", "demo", "1.0.0")
	bare := strings.TrimPrefix(url, "oci://")
	var set *repocreds.Set
	var charts *helmrepo.Cache
	v := newEnv(t, withRepoCreds(t, &set, &charts))
	set = v.repoSecrets(map[string]string{"127.0.0.1": string(reg.CACert)}, map[string]map[string]string{
		"oci-helm-chart": {"name": "loopback", "url": bare, "type": "helm", "enableOCI": "true"},
		"registry-creds": {"_template": "true", "url": reg.Addr + "/charts", "type": "helm", "username": reg.Username, "password": reg.Password},
		"private-wrong":  {"url": "oci://" + reg.Addr + "/private/engine", "type": "helm", "username": reg.Username, "password": "not-the-password"},
	})

	v.upsert(v.chartApp("bare", bare, "demo", "1.1.*", ""))
	res := v.sync("bare", engine.SyncOptions{})
	v.mustSucceed(res)
	if data := v.mustGet(gvrCM, "bare-cm").Object["data"].(map[string]any); res.Revision != "1.1.3" || data["version"] != "1.1.3" {
		t.Errorf("bare form: revision %q, data %v", res.Revision, data)
	}
	v.upsert(v.chartApp("scheme", url, "demo", "1.0.0", ""))
	v.mustSucceed(v.sync("scheme", engine.SyncOptions{}))
	if s := v.refresh("scheme"); s.Sync != engine.Synced || s.Revision != "1.0.0" {
		t.Errorf("oci:// form: %s at %q %+v", s.Sync, s.Revision, s.Conditions)
	}

	// A chart in git depending on the registry's chart by the repository's name.
	v.repo.Commit("main", map[string]string{
		"parent/Chart.yaml":        "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n  - {name: demo, version: 1.1.0, repository: \"@loopback\"}\n",
		"parent/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: parent}\n",
		"parent/values.yaml":       "demo: {message: from-parent}\n",
	}, "parent chart")
	v.upsert(v.application("parent", "parent", ""))
	v.mustSucceed(v.sync("parent", engine.SyncOptions{}))
	if data := v.mustGet(gvrCM, "parent-demo-cm").Object["data"].(map[string]any); data["version"] != "1.1.0" || data["message"] != "from-parent" {
		t.Errorf("dependency from the registry: %v", data)
	}
	pulls := charts.Stats().Downloads
	if pulls != 3 {
		t.Errorf("%d pulls for 3 versions", pulls)
	}

	v.upsert(v.chartApp("missing", url, "demo", "9.9.9", ""))
	s := v.refresh("missing")
	c, ok := s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, url) || !strings.Contains(c.Message, "demo") || !strings.Contains(c.Message, "1.1.3, 1.1.0, 1.0.0") {
		t.Errorf("missing version: %+v", s.Conditions)
	}
	v.upsert(v.chartApp("refused", "oci://"+reg.Addr+"/private/engine", "demo", "1.0.0", ""))
	s = v.refresh("refused")
	c, ok = s.Condition(engine.ConditionComparisonError)
	if !ok || !strings.Contains(c.Message, "refused the credentials") || !strings.Contains(c.Message, reg.Addr+"/private/engine") || strings.Contains(c.Message, "not-the-password") {
		t.Errorf("refused credentials: %+v", s.Conditions)
	}
	for _, name := range []string{"missing", "refused"} {
		if res, err := v.e.Sync(v.ctx(30*time.Second), name, engine.SyncOptions{}); err == nil && res.Phase == engine.PhaseSucceeded {
			t.Errorf("%s: a sync succeeded", name)
		}
		if _, found := v.get(gvrCM, name+"-cm"); found {
			t.Errorf("%s: something was applied", name)
		}
	}
	if charts.Stats().Downloads != pulls {
		t.Error("a failed app pulled something")
	}
}
