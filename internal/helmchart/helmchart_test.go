package helmchart

import (
	"bytes"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	chartpkg "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/freshet-dev/freshet/charts"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (and the runner chart's copy of the executor's Role)")

// releases are the release each chart's golden cases are rendered for.
var releases = map[string]Release{
	charts.Freshet: {Name: "freshet", Namespace: "freshet"},
	charts.Runtime: {Name: "edge", Namespace: "freshet-runtime"},
	charts.Runner:  {Name: "kube", Namespace: "freshet-runner"},
}

// goldenCases are testdata/CHART__CASE.values.yaml, each rendered to CHART__CASE.golden.yaml.
func goldenCases(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{}
	for _, f := range files {
		name, _, ok := strings.Cut(filepath.Base(f), "__")
		if !ok {
			t.Fatalf("%s: want CHART__CASE.values.yaml", f)
		}
		cases[name] = append(cases[name], f)
	}
	for _, n := range Names {
		if len(cases[n]) == 0 {
			t.Errorf("chart %s has no golden case in testdata/", n)
		}
	}
	return cases
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	v, err := chartutil.ReadValues(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v.AsMap()
}

// TestGolden renders each chart like `helm template` for each case's values and compares the
// output with the golden file (go test -update rewrites them; review the diff).
func TestGolden(t *testing.T) {
	for name, files := range goldenCases(t) {
		ch, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			t.Run(strings.TrimSuffix(filepath.Base(f), ".values.yaml"), func(t *testing.T) {
				got, err := Manifest(ch, releases[name], readValues(t, f))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Decode(got); err != nil {
					t.Fatalf("the output is not YAML: %v", err)
				}
				golden := strings.TrimSuffix(f, ".values.yaml") + ".golden.yaml"
				if *update {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from what the chart renders (go test -update rewrites it; review the diff):\n%s", golden, firstDiff(string(want), string(got)))
				}
			})
		}
	}
}

// firstDiff shows the first line where want and got differ, with a little context.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(i+1) + ":\n- " + wl + "\n+ " + gl
		}
	}
	return ""
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// TestLint runs `helm lint` (the SDK's linter, strict: warnings fail) over each chart's
// directory with each golden case's values.
func TestLint(t *testing.T) {
	for name, files := range goldenCases(t) {
		for _, f := range files {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = releases[name].Namespace
			res := l.Run([]string{filepath.Join("..", "..", "charts", name)}, readValues(t, f))
			for _, m := range res.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("helm lint %s with %s: %s", name, filepath.Base(f), m)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("helm lint %s with %s: %v", name, filepath.Base(f), err)
			}
		}
	}
}

// Bad values are refused before anything is rendered, with a message that names the value
// (the schema's, or the chart's own check of a combination the schema cannot express).
func TestBadValuesAreNamed(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"masterKey": map[string]any{"value": "k1:q83vEjSvwLFvDcm2WZB7hjRMLx4nBvqQ/FTqgS+BJRg="},
			"database":  map[string]any{"url": "postgres://db/freshet"},
			"nats":      map[string]any{"url": "nats://nats:4222"},
			"tunnel":    map[string]any{"hopSecret": strings.Repeat("s", 32)},
		}
	}
	ch, err := Load(charts.Freshet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Render(ch, releases[charts.Freshet], base()); err != nil {
		t.Fatalf("the base values are refused: %v", err)
	}
	for _, c := range []struct {
		name  string
		set   func(v map[string]any)
		wants []string
	}{
		{"mysql URL", func(v map[string]any) { v["database"] = map[string]any{"url": "mysql://db/freshet"} }, []string{"database", "url", "postgres"}},
		{"no replicas", func(v map[string]any) { v["replicaCount"] = 0 }, []string{"replicaCount", "minimum"}},
		{"unknown value", func(v map[string]any) { v["replicas"] = 3 }, []string{"replicas"}},
		{"two databases", func(v map[string]any) {
			v["database"] = map[string]any{"url": "postgres://db/f", "bundled": map[string]any{"enabled": true, "password": "x"}}
		}, []string{"database: set exactly one of database.url"}},
		{"no master key", func(v map[string]any) { delete(v, "masterKey") }, []string{"masterKey: set masterKey.value"}},
		{"replicas without hop secret", func(v map[string]any) { delete(v, "tunnel") }, []string{"tunnel.hopSecret", "replicaCount 2"}},
		{"short hop secret", func(v map[string]any) { v["tunnel"] = map[string]any{"hopSecret": "short"} }, []string{"/tunnel/hopSecret"}},
		{"stream replicas on the bundled NATS", func(v map[string]any) {
			v["nats"] = map[string]any{"replicas": 3, "bundled": map[string]any{"enabled": true}}
		}, []string{"nats.replicas 3", "single node"}},
		{"six stream replicas", func(v map[string]any) { v["nats"] = map[string]any{"url": "nats://n:4222", "replicas": 6} }, []string{"/nats/replicas", "maximum"}},
		{"ingress without host", func(v map[string]any) { v["ingress"] = map[string]any{"host": ""} }, []string{"ingress", "host"}},
		{"hosted runtimes on a cluster with no URL to dial", func(v map[string]any) {
			v["ingress"] = map[string]any{"enabled": false}
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes"}
		}, []string{"/hostedRuntimes/server", "minLength"}},
		{"hosted runtimes mode", func(v map[string]any) { v["hostedRuntimes"] = map[string]any{"mode": "k8s"} }, []string{"/hostedRuntimes/mode", "kubernetes"}},
		{"kubeconfig in process", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"kubeconfigSecret": map[string]any{"name": "platform"}}
		}, []string{"/hostedRuntimes/kubeconfigSecret/name"}},
		{"kubeconfig key", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "kubeconfigSecret": map[string]any{"name": "platform", "key": ""}}
		}, []string{"/hostedRuntimes/kubeconfigSecret/key"}},
		{"hosted storage class without a claim", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "storage": map[string]any{"size": "0", "storageClass": "fast"}}
		}, []string{"/hostedRuntimes/storage/storageClass"}},
		{"hosted storage of no size", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "storage": map[string]any{"size": "0Gi"}}
		}, []string{"/hostedRuntimes/storage/size"}},
		{"hosted toleration without effect", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "tolerations": []any{map[string]any{"key": "pool"}}}
		}, []string{"/hostedRuntimes/tolerations/0", "effect"}},
		{"hosted toleration of any value with a value", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "tolerations": []any{map[string]any{"key": "pool", "operator": "Exists", "value": "x", "effect": "NoSchedule"}}}
		}, []string{"/hostedRuntimes/tolerations/0/value"}},
		{"hosted RBAC not a boolean", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "rbac": map[string]any{"create": "no"}}
		}, []string{"/hostedRuntimes/rbac/create", "boolean"}},
		{"hosted RBAC unknown value", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "rbac": map[string]any{"enabled": false}}
		}, []string{"/hostedRuntimes/rbac", "enabled"}},
		{"hosted namespace prefix", func(v map[string]any) {
			v["hostedRuntimes"] = map[string]any{"mode": "kubernetes", "namespacePrefix": "Hosted"}
		}, []string{"/hostedRuntimes/namespacePrefix"}},
	} {
		v := base()
		c.set(v)
		_, err := Render(ch, releases[charts.Freshet], v)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%s: err = %v, want invalid", c.name, err)
			continue
		}
		for _, w := range c.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
	// Hosted runtimes on a cluster need no server URL of their own where publicURL or the
	// Ingress gives one.
	for _, c := range []map[string]any{
		{"hostedRuntimes": map[string]any{"mode": "kubernetes"}},
		{"hostedRuntimes": map[string]any{"mode": "kubernetes"}, "ingress": map[string]any{"enabled": false}, "publicURL": "https://ci.example.com"},
		{"hostedRuntimes": map[string]any{"mode": "kubernetes", "server": "http://freshet.freshet.svc"}, "ingress": map[string]any{"enabled": false}},
	} {
		v := base()
		maps.Copy(v, c)
		if _, err := Render(ch, releases[charts.Freshet], v); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	// The runtime and runner charts check their values too.
	rt, _ := Load(charts.Runtime)
	if _, err := Render(rt, releases[charts.Runtime], map[string]any{"server": "https://x", "accessMode": "vpn"}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "accessMode") {
		t.Errorf("runtime accessMode vpn: %v", err)
	}
	for _, c := range []struct {
		persistence map[string]any
		want        string
	}{
		{map[string]any{"enabled": true, "size": "lots"}, "/persistence/size"},
		{map[string]any{"enabled": true, "size": "1 Gi"}, "/persistence/size"},
		{map[string]any{"enabled": "yes"}, "/persistence/enabled"},
		{map[string]any{"enabled": true, "storageClass": "Fast SSD"}, "/persistence/storageClass"},
		{map[string]any{"enabled": true, "sizes": "1Gi"}, "sizes"},
		// A claim of no size: refused by the schema, not by the API server at install time.
		{map[string]any{"enabled": true, "size": "0"}, "/persistence/size"},
		{map[string]any{"enabled": true, "size": "0Gi"}, "/persistence/size"},
		{map[string]any{"enabled": true, "size": "0.0Mi"}, "/persistence/size"},
		{map[string]any{"enabled": true, "size": ""}, "/persistence/size"},
		{map[string]any{"enabled": true, "size": nil}, "size"},
	} {
		_, err := Render(rt, releases[charts.Runtime], map[string]any{"server": "https://x", "persistence": c.persistence})
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("runtime persistence %v: %v, want invalid naming %s", c.persistence, err, c.want)
		}
	}
	// Positive sizes pass, and without persistence a zero size is no claim and no matter.
	for _, p := range []map[string]any{
		{"enabled": true, "size": "1"}, {"enabled": true, "size": "0.5Gi"}, {"enabled": true, "size": "10Gi"}, {"enabled": true, "size": "100Mi"},
		{"enabled": false, "size": "0"},
	} {
		if _, err := Render(rt, releases[charts.Runtime], map[string]any{"server": "https://x", "persistence": p}); err != nil {
			t.Errorf("runtime persistence %v: %v", p, err)
		}
	}
	// The events port: a port, and not the app-proxy's.
	for _, port := range []any{8080, 70000, -1, "12000"} {
		_, err := Render(rt, releases[charts.Runtime], map[string]any{"server": "https://x", "events": map[string]any{"port": port}})
		if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "/events/port") {
			t.Errorf("runtime events.port %v: %v, want invalid naming /events/port", port, err)
		}
	}
	rn, _ := Load(charts.Runner)
	if _, err := Render(rn, releases[charts.Runner], map[string]any{"server": "https://x", "env": map[string]any{"FRESHET_RUNNER_TOKEN": "x"}}); !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), "env") {
		t.Errorf("runner env FRESHET_*: %v", err)
	}
}

// The runner chart's Role is the kubernetes executor's role.yaml, byte for byte: one
// definition of what the executor needs (go test -update copies it).
func TestRunnerRoleIsTheExecutors(t *testing.T) {
	src := filepath.Join("..", "runner", "executor", "kubernetes", "role.yaml")
	dst := filepath.Join("..", "..", "charts", charts.Runner, "files", "executor-role.yaml")
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(dst, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s: go test ./internal/helmchart -run TestRunnerRoleIsTheExecutors -update copies it", dst, src)
	}
}

// FuzzRenderValues feeds arbitrary values files to the runner and runtime charts: the schema
// and the templates refuse or render them, never panic, and what renders decodes.
func FuzzRenderValues(f *testing.F) {
	for _, s := range []string{
		"server: https://x\ntoken: {value: frn_a}\n",
		"server: https://x\nlabels: {a: \"1\"}\nenv: {A: b}\nconcurrency: 3\n",
		"server: https://x\naccessMode: ingress\ningress: {host: h}\n",
		"server: [1]\n", "{{ .Release.Name }}: x\n", "name: \"a\\nb\"\nserver: http://x\n",
	} {
		f.Add([]byte(s))
	}
	rn, err := Load(charts.Runner)
	if err != nil {
		f.Fatal(err)
	}
	rt, err := Load(charts.Runtime)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := chartutil.ReadValues(data)
		if err != nil {
			return
		}
		for _, ch := range []*chartpkg.Chart{rn, rt} {
			m, err := Manifest(ch, Release{Name: "f", Namespace: "f"}, v.AsMap())
			if err != nil {
				if !errors.Is(err, errdefs.ErrInvalid) {
					t.Fatalf("%s: %v is not ErrInvalid", ch.Name(), err)
				}
				continue
			}
			if _, err := Decode(m); err != nil {
				t.Fatalf("%s rendered what does not decode: %v\n%s", ch.Name(), err, m)
			}
		}
	})
}
